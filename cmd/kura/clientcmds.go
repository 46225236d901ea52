package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/consistency"
)

// clientFlags are the flags every client command takes.
type clientFlags struct {
	addr        *string
	keyspace    *string
	consistency *string
	timeout     *time.Duration
}

func addClientFlags(fs *flag.FlagSet) clientFlags {
	return clientFlags{
		addr:        fs.String("addr", defaultClientAddr, "client API address of a node (comma-separated for several)"),
		keyspace:    fs.String("keyspace", "default", "keyspace"),
		consistency: fs.String("consistency", "ONE", "ANY, ONE, TWO, QUORUM, LOCAL_ONE, LOCAL_QUORUM, EACH_QUORUM or ALL"),
		timeout:     fs.Duration("timeout", 10*time.Second, "how long to wait for the answer"),
	}
}

// connect parses the level and dials the cluster; the caller must cancel and close.
func (f clientFlags) connect() (*client.Client, consistency.Level, context.Context, context.CancelFunc, error) {
	level, err := consistency.Parse(*f.consistency)
	if err != nil {
		return nil, 0, nil, nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *f.timeout)
	c, err := client.Dial(ctx, strings.Split(*f.addr, ","), client.Options{})
	if err != nil {
		cancel()
		return nil, 0, nil, nil, err
	}
	return c, level, ctx, cancel, nil
}

// explain adds what to do next to errors a newcomer meets first.
func (f clientFlags) explain(err error) error {
	if client.IsNotFound(err) {
		return fmt.Errorf("%w (create it first: kura keyspace create %s --replication simple=3)", err, *f.keyspace)
	}
	return err
}

func runPut(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("put", stderr)
	cf := addClientFlags(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 {
		return fmt.Errorf("%w: put KEY [VALUE|-] (without VALUE, or with -, the value is read from standard input)", errUsage)
	}
	var value []byte
	if len(pos) == 2 && pos[1] != "-" {
		value = []byte(pos[1])
	} else if value, err = io.ReadAll(os.Stdin); err != nil {
		return fmt.Errorf("read value from standard input: %w", err)
	}
	c, level, ctx, cancel, err := cf.connect()
	if err != nil {
		return err
	}
	defer cancel()
	defer c.Close()
	_, err = c.Put(ctx, *cf.keyspace, []byte(pos[0]), value, level)
	return cf.explain(err)
}

func runGet(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("get", stderr)
	cf := addClientFlags(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: get KEY", errUsage)
	}
	c, level, ctx, cancel, err := cf.connect()
	if err != nil {
		return err
	}
	defer cancel()
	defer c.Close()
	value, found, err := c.Get(ctx, *cf.keyspace, []byte(pos[0]), level)
	if err != nil {
		return cf.explain(err)
	}
	if !found {
		fmt.Fprintln(stderr, "not found")
		return errNotFound
	}
	_, err = stdout.Write(value)
	return err
}

func runDel(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("del", stderr)
	cf := addClientFlags(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: del KEY", errUsage)
	}
	c, level, ctx, cancel, err := cf.connect()
	if err != nil {
		return err
	}
	defer cancel()
	defer c.Close()
	_, err = c.Delete(ctx, *cf.keyspace, []byte(pos[0]), level)
	return cf.explain(err)
}

func runScan(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("scan", stderr)
	cf := addClientFlags(fs)
	start := fs.String("start", "", "first key (inclusive)")
	end := fs.String("end", "", "end key (exclusive; empty: to the last key)")
	limit := fs.Int("limit", 0, "at most this many keys (0: the server's default, 1000)")
	asJSON := fs.Bool("json", false, "print a JSON array of {key, value} (values base64)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return fmt.Errorf("%w: scan takes no arguments, only flags", errUsage)
	}
	c, level, ctx, cancel, err := cf.connect()
	if err != nil {
		return err
	}
	defer cancel()
	defer c.Close()
	items, err := c.Scan(ctx, *cf.keyspace, nonEmpty(*start), nonEmpty(*end), *limit, level)
	if err != nil {
		return cf.explain(err)
	}
	if *asJSON {
		type item struct {
			Key   string `json:"key"`
			Value []byte `json:"value"`
		}
		out := make([]item, len(items))
		for i, kv := range items {
			out[i] = item{Key: string(kv.Key), Value: kv.Value}
		}
		return json.NewEncoder(stdout).Encode(out)
	}
	for _, kv := range items {
		fmt.Fprintf(stdout, "%s\t%s\n", printable(kv.Key), printable(kv.Value))
	}
	return nil
}

func nonEmpty(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// printable shows b as it is when it is printable text without tabs, newlines or quotes,
// and Go-quoted otherwise, so that one line is one key.
func printable(b []byte) string {
	s := string(b)
	plain := utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool {
		return !strconv.IsPrint(r) || r == '\t' || r == '"'
	}) < 0
	if plain {
		return s
	}
	return strconv.Quote(s)
}

func runKeyspace(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: keyspace create NAME --replication dc1=2,dc2=1 | keyspace list | keyspace describe NAME", errUsage)
	}
	fs := newFlagSet("keyspace "+args[0], stderr)
	cf := addClientFlags(fs)
	replication := fs.String("replication", "", `replicas per DC ("dc1=2,dc2=1") or in all ("simple=3")`)
	partitioner := fs.String("partitioner", "hash", "hash (uniform) or ordered (order-preserving, for range scans)")
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	c, _, ctx, cancel, err := cf.connect()
	if err != nil {
		return err
	}
	defer cancel()
	defer c.Close()
	switch args[0] {
	case "create":
		if len(pos) != 1 || *replication == "" {
			return fmt.Errorf("%w: keyspace create NAME --replication dc1=2,dc2=1 [--partitioner hash|ordered]", errUsage)
		}
		if err := c.CreateKeyspace(ctx, pos[0], *replication, *partitioner); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "keyspace %s created\n", pos[0])
		return nil
	case "list":
		list, err := c.Keyspaces(ctx)
		if err != nil {
			return err
		}
		for _, ks := range list {
			fmt.Fprintf(stdout, "%s\treplication=%s\tpartitioner=%s\n", ks.GetName(), ks.GetReplication(), ks.GetPartitioner())
		}
		return nil
	case "describe":
		if len(pos) != 1 {
			return fmt.Errorf("%w: keyspace describe NAME", errUsage)
		}
		ks, err := c.Keyspace(ctx, pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "name: %s\nreplication: %s\npartitioner: %s\n", ks.GetName(), ks.GetReplication(), ks.GetPartitioner())
		return nil
	}
	return fmt.Errorf("%w: unknown keyspace subcommand %q (create, list, describe)", errUsage, args[0])
}

func runStatus(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("status", stderr)
	cf := addClientFlags(fs)
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	c, _, ctx, cancel, err := cf.connect()
	if err != nil {
		return err
	}
	defer cancel()
	defer c.Close()
	st, err := c.Status(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "seen from %s\n%-16s %-12s %-6s %-22s %s\n", st.GetSelf(), "NODE", "DC", "STATE", "ADDR", "CLIENT")
	for _, n := range st.GetNodes() {
		state := "up"
		if !n.GetAlive() {
			state = "down"
		}
		fmt.Fprintf(stdout, "%-16s %-12s %-6s %-22s %s\n", n.GetId(), n.GetDc(), state, n.GetAddr(), n.GetClientAddr())
	}
	return nil
}
