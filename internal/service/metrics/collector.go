package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// powerStates are the values of kura_power_state's label, every one exported so that a
// query sees the state change rather than a series appear.
var powerStates = []string{"active", "draining", "asleep", "waking"}

// nodeCollector exports the figures the node keeps itself, read at scrape time: the
// transport's counters and the node's gauges.
type nodeCollector struct {
	cfg Config

	transportBytes    *prometheus.Desc
	transportMessages *prometheus.Desc
	transportRefused  *prometheus.Desc
	hintsPending      *prometheus.Desc
	members           *prometheus.Desc
	storageDiskBytes  *prometheus.Desc
	compactionPaced   *prometheus.Desc
	rowCacheReads     *prometheus.Desc
	rowCacheBytes     *prometheus.Desc
	scanRereads       *prometheus.Desc
	clockOffset       *prometheus.Desc
	clockOK           *prometheus.Desc
	clockAheadMax     *prometheus.Desc
	powerState        *prometheus.Desc
	powerWatts        *prometheus.Desc
	energyJoules      *prometheus.Desc
	readQueued        *prometheus.Desc
	readServed        *prometheus.Desc
	readWait          *prometheus.Desc
	readBusy          *prometheus.Desc
}

func newNodeCollector(cfg Config) *nodeCollector {
	flow := []string{"from_dc", "to_dc", "kind"}
	return &nodeCollector{
		cfg: cfg,
		transportBytes: prometheus.NewDesc("kura_transport_bytes_total",
			"Bytes sent between nodes (frame header and payload), by source and destination datacenter and message kind.", flow, nil),
		transportMessages: prometheus.NewDesc("kura_transport_messages_total",
			"Messages sent between nodes, by source and destination datacenter and message kind.", flow, nil),
		transportRefused: prometheus.NewDesc("kura_transport_send_queue_refused_total",
			"Messages refused because a peer's send queue was full: the peer did not drain its connection.", nil, nil),
		hintsPending: prometheus.NewDesc("kura_hints_pending",
			"Writes this node holds for replicas that missed them.", nil, nil),
		members: prometheus.NewDesc("kura_members",
			"Cluster members this node knows, by state (alive, down).", []string{"state"}, nil),
		storageDiskBytes: prometheus.NewDesc("kura_storage_disk_bytes",
			"Space the node's storage files take.", nil, nil),
		compactionPaced: prometheus.NewDesc("kura_storage_compaction_paced_seconds_total",
			"Time the storage engine's compactions waited for their pace (--compaction-throughput).", nil, nil),
		rowCacheReads: prometheus.NewDesc("kura_storage_row_cache_reads_total",
			"Reads of the storage engine's row cache (a write reads the record it replaces), by result (hit, miss: read from Pebble).", []string{"result"}, nil),
		rowCacheBytes: prometheus.NewDesc("kura_storage_row_cache_bytes",
			"About the memory the row cache's entries take (--row-cache bounds it).", nil, nil),
		scanRereads: prometheus.NewDesc("kura_scan_rereads_total",
			"Scan rounds this node coordinated and read again with every replica's values, after a replica's digests showed versions the values read lacked.", nil, nil),
		clockOffset: prometheus.NewDesc("kura_clock_offset_seconds",
			"This node's clock minus the cluster's (the median of its peers'), as its clock guard measures it.", nil, nil),
		clockOK: prometheus.NewDesc("kura_clock_ok",
			"1 when the node's clock is within the max offset of its peers' and it coordinates writes, 0 when it refuses them.", nil, nil),
		clockAheadMax: prometheus.NewDesc("kura_clock_ahead_max_seconds",
			"How far the largest timestamp the node stamped or stored is ahead of the cluster's clock (0: not ahead).", nil, nil),
		powerState: prometheus.NewDesc("kura_power_state",
			"1 for the node's power state (active, draining, asleep, waking), 0 for the others.", []string{"state"}, nil),
		powerWatts: prometheus.NewDesc("kura_power_watts",
			"The node's modelled power draw (paper 003's figures, transition times applied).", nil, nil),
		energyJoules: prometheus.NewDesc("kura_energy_joules_total",
			"The node's modelled energy since it started.", nil, nil),
		readQueued: prometheus.NewDesc("kura_read_queued",
			"Reads waiting for a worker of the node's read stage, by class (local_get, remote_get, scan_page).", []string{"class"}, nil),
		readServed: prometheus.NewDesc("kura_read_served_total",
			"Reads the node's read stage gave a worker, by class.", []string{"class"}, nil),
		readWait: prometheus.NewDesc("kura_read_wait_seconds_total",
			"Time the served reads waited in the read stage's queue, by class.", []string{"class"}, nil),
		readBusy: prometheus.NewDesc("kura_read_workers_busy",
			"Workers of the node's read stage at work.", nil, nil),
	}
}

// Describe sends every metric's description.
func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.transportBytes
	ch <- c.transportMessages
	ch <- c.transportRefused
	ch <- c.hintsPending
	ch <- c.members
	ch <- c.storageDiskBytes
	ch <- c.compactionPaced
	ch <- c.rowCacheReads
	ch <- c.rowCacheBytes
	ch <- c.scanRereads
	ch <- c.clockOffset
	ch <- c.clockOK
	ch <- c.clockAheadMax
	ch <- c.powerState
	ch <- c.powerWatts
	ch <- c.energyJoules
	ch <- c.readQueued
	ch <- c.readServed
	ch <- c.readWait
	ch <- c.readBusy
}

// Collect reads the counters and gauges.
func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	if c.cfg.Stats != nil {
		for flow, counter := range c.cfg.Stats.Snapshot() {
			labels := []string{flow.FromDC, flow.ToDC, flow.Kind.String()}
			ch <- prometheus.MustNewConstMetric(c.transportBytes, prometheus.CounterValue, float64(counter.Bytes), labels...)
			ch <- prometheus.MustNewConstMetric(c.transportMessages, prometheus.CounterValue, float64(counter.Messages), labels...)
		}
		ch <- prometheus.MustNewConstMetric(c.transportRefused, prometheus.CounterValue, float64(c.cfg.Stats.SendQueueRefused()))
	}
	if c.cfg.Gauges != nil {
		g := c.cfg.Gauges()
		ch <- prometheus.MustNewConstMetric(c.hintsPending, prometheus.GaugeValue, float64(g.HintsPending))
		ch <- prometheus.MustNewConstMetric(c.members, prometheus.GaugeValue, float64(g.MembersAlive), "alive")
		ch <- prometheus.MustNewConstMetric(c.members, prometheus.GaugeValue, float64(g.MembersDown), "down")
		ch <- prometheus.MustNewConstMetric(c.storageDiskBytes, prometheus.GaugeValue, float64(g.StorageDiskBytes))
		ch <- prometheus.MustNewConstMetric(c.compactionPaced, prometheus.CounterValue, g.StorageCompactionPacedSeconds)
		ch <- prometheus.MustNewConstMetric(c.rowCacheReads, prometheus.CounterValue, float64(g.RowCacheHits), "hit")
		ch <- prometheus.MustNewConstMetric(c.rowCacheReads, prometheus.CounterValue, float64(g.RowCacheMisses), "miss")
		ch <- prometheus.MustNewConstMetric(c.rowCacheBytes, prometheus.GaugeValue, float64(g.RowCacheBytes))
		ch <- prometheus.MustNewConstMetric(c.scanRereads, prometheus.CounterValue, float64(g.ScanRereads))
		ch <- prometheus.MustNewConstMetric(c.clockOffset, prometheus.GaugeValue, g.ClockOffsetSeconds)
		ok := 0.0
		if g.ClockOK {
			ok = 1
		}
		ch <- prometheus.MustNewConstMetric(c.clockOK, prometheus.GaugeValue, ok)
		ch <- prometheus.MustNewConstMetric(c.clockAheadMax, prometheus.GaugeValue, g.ClockAheadMaxSeconds)
		for _, state := range powerStates {
			on := 0.0
			if state == g.PowerState {
				on = 1
			}
			ch <- prometheus.MustNewConstMetric(c.powerState, prometheus.GaugeValue, on, state)
		}
		ch <- prometheus.MustNewConstMetric(c.powerWatts, prometheus.GaugeValue, g.PowerWatts)
		ch <- prometheus.MustNewConstMetric(c.energyJoules, prometheus.CounterValue, g.EnergyJoules)
		for _, rc := range g.ReadClasses {
			ch <- prometheus.MustNewConstMetric(c.readQueued, prometheus.GaugeValue, float64(rc.Queued), rc.Class)
			ch <- prometheus.MustNewConstMetric(c.readServed, prometheus.CounterValue, float64(rc.Served), rc.Class)
			ch <- prometheus.MustNewConstMetric(c.readWait, prometheus.CounterValue, rc.WaitSeconds, rc.Class)
		}
		ch <- prometheus.MustNewConstMetric(c.readBusy, prometheus.GaugeValue, float64(g.ReadWorkersBusy))
	}
}
