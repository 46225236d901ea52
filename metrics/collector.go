package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// nodeCollector exports the figures the node keeps itself, read at scrape time: the
// transport's counters and the node's gauges.
type nodeCollector struct {
	cfg Config

	transportBytes    *prometheus.Desc
	transportMessages *prometheus.Desc
	hintsPending      *prometheus.Desc
	members           *prometheus.Desc
	storageDiskBytes  *prometheus.Desc
}

func newNodeCollector(cfg Config) *nodeCollector {
	flow := []string{"from_dc", "to_dc", "kind"}
	return &nodeCollector{
		cfg: cfg,
		transportBytes: prometheus.NewDesc("kura_transport_bytes_total",
			"Bytes sent between nodes (frame header and payload), by source and destination datacenter and message kind.", flow, nil),
		transportMessages: prometheus.NewDesc("kura_transport_messages_total",
			"Messages sent between nodes, by source and destination datacenter and message kind.", flow, nil),
		hintsPending: prometheus.NewDesc("kura_hints_pending",
			"Writes this node holds for replicas that missed them.", nil, nil),
		members: prometheus.NewDesc("kura_members",
			"Cluster members this node knows, by state (alive, down).", []string{"state"}, nil),
		storageDiskBytes: prometheus.NewDesc("kura_storage_disk_bytes",
			"Space the node's storage files take.", nil, nil),
	}
}

// Describe sends every metric's description.
func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.transportBytes
	ch <- c.transportMessages
	ch <- c.hintsPending
	ch <- c.members
	ch <- c.storageDiskBytes
}

// Collect reads the counters and gauges.
func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	if c.cfg.Stats != nil {
		for flow, counter := range c.cfg.Stats.Snapshot() {
			labels := []string{flow.FromDC, flow.ToDC, flow.Kind.String()}
			ch <- prometheus.MustNewConstMetric(c.transportBytes, prometheus.CounterValue, float64(counter.Bytes), labels...)
			ch <- prometheus.MustNewConstMetric(c.transportMessages, prometheus.CounterValue, float64(counter.Messages), labels...)
		}
	}
	if c.cfg.Gauges != nil {
		g := c.cfg.Gauges()
		ch <- prometheus.MustNewConstMetric(c.hintsPending, prometheus.GaugeValue, float64(g.HintsPending))
		ch <- prometheus.MustNewConstMetric(c.members, prometheus.GaugeValue, float64(g.MembersAlive), "alive")
		ch <- prometheus.MustNewConstMetric(c.members, prometheus.GaugeValue, float64(g.MembersDown), "down")
		ch <- prometheus.MustNewConstMetric(c.storageDiskBytes, prometheus.GaugeValue, float64(g.StorageDiskBytes))
	}
}
