package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/service/rebalance"
)

// clientFlags are the flags every client command takes.
type clientFlags struct {
	addr        *string
	keyspace    *string
	consistency *string
	timeout     *time.Duration
	security    securityFlags
}

func addClientFlags(fs *flag.FlagSet) clientFlags {
	return clientFlags{
		addr:        fs.String("addr", defaultClientAddr, "client API address of a node (comma-separated for several)"),
		keyspace:    fs.String("keyspace", "default", "keyspace"),
		consistency: fs.String("consistency", "ONE", "ANY, ONE, TWO, QUORUM, LOCAL_ONE, LOCAL_QUORUM, EACH_QUORUM or ALL; for a linearizable get, SERIAL or LOCAL_SERIAL"),
		timeout:     fs.Duration("timeout", 10*time.Second, "how long to wait for the answer"),
		security:    addSecurityFlags(fs),
	}
}

// parse parses args and checks that between minArgs and maxArgs arguments remain.
func (f clientFlags) parse(fs *flag.FlagSet, args []string, minArgs, maxArgs int, usage string) ([]string, error) {
	pos, err := parseFlags(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) < minArgs || len(pos) > maxArgs {
		return nil, fmt.Errorf("%w: %s", errUsage, usage)
	}
	return pos, nil
}

// withClient dials the cluster as the flags say, runs fn, and closes the connection.
func (f clientFlags) withClient(fn func(ctx context.Context, c *client.Client, level consistency.Level) error) error {
	level, err := consistency.Parse(*f.consistency)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	opts, err := f.security.options()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *f.timeout)
	defer cancel()
	c, err := client.Dial(ctx, strings.Split(*f.addr, ","), opts)
	if err != nil {
		return err
	}
	defer c.Close()
	err = fn(ctx, c, level)
	if client.IsNotFound(err) {
		// The first error a newcomer meets: say what to do next.
		return fmt.Errorf("%w (create it first: kura keyspace create %s --replication simple=3)", err, *f.keyspace)
	}
	return err
}

func runPut(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("put", stderr)
	cf := addClientFlags(fs)
	ttl := fs.Duration("ttl", 0, "expire the value this long after the put (e.g. 10s, 1h); 0: never")
	pos, err := cf.parse(fs, args, 1, 2, "put KEY [VALUE|-] [--ttl DURATION] (without VALUE, or with -, the value is read from standard input)")
	if err != nil {
		return err
	}
	if *ttl < 0 {
		return fmt.Errorf("%w: --ttl %v is negative", errUsage, *ttl)
	}
	var value []byte
	if len(pos) == 2 && pos[1] != "-" {
		value = []byte(pos[1])
	} else if value, err = io.ReadAll(os.Stdin); err != nil {
		return fmt.Errorf("read value from standard input: %w", err)
	}
	return cf.withClient(func(ctx context.Context, c *client.Client, level consistency.Level) error {
		_, err := c.Put(ctx, *cf.keyspace, []byte(pos[0]), value, level, client.WithTTL(*ttl))
		return err
	})
}

func runGet(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("get", stderr)
	cf := addClientFlags(fs)
	pos, err := cf.parse(fs, args, 1, 1, "get KEY")
	if err != nil {
		return err
	}
	return cf.withClient(func(ctx context.Context, c *client.Client, level consistency.Level) error {
		item, found, err := c.Get(ctx, *cf.keyspace, []byte(pos[0]), level)
		if err != nil {
			return err
		}
		if !found {
			fmt.Fprintln(stderr, "not found")
			return errNotFound
		}
		if !item.ExpiresAt.IsZero() {
			// On standard error, so that standard output stays the value alone.
			fmt.Fprintf(stderr, "expires in %v (at %s)\n", time.Until(item.ExpiresAt).Round(time.Millisecond), item.ExpiresAt.UTC().Format(time.RFC3339Nano))
		}
		if _, err = stdout.Write(item.Value); err != nil {
			return err
		}
		if isTerminal(stdout) && !bytes.HasSuffix(item.Value, []byte("\n")) {
			// The prompt on a line of its own; a pipe or file gets the value byte for byte.
			_, err = io.WriteString(stdout, "\n")
		}
		return err
	})
}

func runDel(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("del", stderr)
	cf := addClientFlags(fs)
	pos, err := cf.parse(fs, args, 1, 1, "del KEY")
	if err != nil {
		return err
	}
	return cf.withClient(func(ctx context.Context, c *client.Client, level consistency.Level) error {
		_, err := c.Delete(ctx, *cf.keyspace, []byte(pos[0]), level)
		return err
	})
}

func runCas(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cas", stderr)
	cf := addClientFlags(fs)
	if err := fs.Set("consistency", consistency.Serial.String()); err != nil {
		return err
	}
	ifAbsent := fs.Bool("if-absent", false, "write only if the key has no value")
	ifPresent := fs.Bool("if-present", false, "write only if the key has a value")
	ifEquals := fs.String("if-equals", "", "write only if the key's value is exactly this")
	del := fs.Bool("delete", false, "delete the key instead of writing VALUE")
	ttl := fs.Duration("ttl", 0, "the written value expires this long after the request (0: never)")
	pos, err := cf.parse(fs, args, 1, 2, "cas KEY [VALUE] --if-absent | --if-present | --if-equals OLD [--delete] [--ttl D] [--consistency SERIAL|LOCAL_SERIAL]")
	if err != nil {
		return err
	}
	var cond client.Condition
	conditions := 0
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *ifAbsent {
		cond, conditions = client.IfAbsent(), conditions+1
	}
	if *ifPresent {
		cond, conditions = client.IfPresent(), conditions+1
	}
	if set["if-equals"] {
		cond, conditions = client.IfEquals([]byte(*ifEquals)), conditions+1
	}
	if conditions != 1 {
		return fmt.Errorf("%w: cas takes one condition: --if-absent, --if-present or --if-equals OLD", errUsage)
	}
	var action client.Action
	switch {
	case *del && len(pos) == 1:
		action = client.DeleteValue()
	case !*del && len(pos) == 2:
		action = client.PutValue([]byte(pos[1]), *ttl)
	default:
		return fmt.Errorf("%w: cas KEY VALUE writes VALUE, cas KEY --delete deletes the key", errUsage)
	}
	return cf.withClient(func(ctx context.Context, c *client.Client, level consistency.Level) error {
		res, err := c.CompareAndSet(ctx, *cf.keyspace, []byte(pos[0]), cond, action, level)
		if err != nil {
			return err
		}
		value := "(none)"
		if res.Found {
			value = printable(res.Value)
		}
		if res.Applied {
			fmt.Fprintf(stdout, "applied (was %s)\n", value)
			return nil
		}
		fmt.Fprintf(stdout, "not applied (is %s)\n", value)
		return errNotApplied
	})
}

func runScan(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("scan", stderr)
	cf := addClientFlags(fs)
	start := fs.String("start", "", "first key (inclusive)")
	end := fs.String("end", "", "end key (exclusive; empty: to the last key)")
	limit := fs.Int("limit", 0, "at most this many keys (0: the server's default, 1000)")
	keysOnly := fs.Bool("keys-only", false, "print the keys alone (the default when standard output is a terminal)")
	values := fs.Bool("values", false, "print each key and its value, tab-separated (the default when standard output is not a terminal)")
	asHex := fs.Bool("hex", false, "print keys and values in hexadecimal, for binary data")
	asJSON := fs.Bool("json", false, "print a JSON array of {key, value}: UTF-8 text as text, other bytes base64 in key_base64 or value_base64 (keys alone with --keys-only)")
	if _, err := cf.parse(fs, args, 0, 0, "scan takes no arguments, only flags"); err != nil {
		return err
	}
	if *keysOnly && *values {
		return fmt.Errorf("%w: --keys-only and --values contradict each other", errUsage)
	}
	if *asHex && *asJSON {
		return fmt.Errorf("%w: --hex and --json contradict each other (--json gives bytes that are not UTF-8 in base64)", errUsage)
	}
	withValues := *values || !*keysOnly && !isTerminal(stdout)
	var items []client.KeyValue
	err := cf.withClient(func(ctx context.Context, c *client.Client, level consistency.Level) (err error) {
		items, err = c.Scan(ctx, *cf.keyspace, nonEmpty(*start), nonEmpty(*end), *limit, level)
		return err
	})
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(scanJSON(items, !*keysOnly))
	}
	show := func(b []byte) []byte { return b }
	if *asHex {
		show = func(b []byte) []byte { return hex.AppendEncode(nil, b) }
	}
	w := bufio.NewWriter(stdout)
	for _, kv := range items {
		w.Write(show(kv.Key))
		if withValues {
			w.WriteByte('\t')
			w.Write(show(kv.Value))
		}
		w.WriteByte('\n')
	}
	return w.Flush()
}

// scanItem is one key of kura scan --json. Keys and values are mostly text, which a
// program should read as it is; bytes that are not UTF-8 would be mangled into U+FFFD
// as a JSON string, so they come in base64 under the field named so. Each of key and
// value is in exactly one of its two fields, and which one says how to read it.
type scanItem struct {
	Key         *string `json:"key,omitempty"`
	KeyBase64   []byte  `json:"key_base64,omitempty"`
	Value       *string `json:"value,omitempty"`
	ValueBase64 []byte  `json:"value_base64,omitempty"`
}

// scanJSON returns kura scan --json's items, with their values if withValues.
func scanJSON(items []client.KeyValue, withValues bool) []scanItem {
	out := make([]scanItem, len(items))
	for i, kv := range items {
		out[i].Key, out[i].KeyBase64 = textOrBytes(kv.Key)
		if withValues {
			out[i].Value, out[i].ValueBase64 = textOrBytes(kv.Value)
		}
	}
	return out
}

// textOrBytes returns b as text when it is UTF-8, else as bytes (for base64).
func textOrBytes(b []byte) (*string, []byte) {
	if utf8.Valid(b) {
		s := string(b)
		return &s, nil
	}
	return nil, b
}

// isTerminal reports whether w is a terminal, where people read rather than programs.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
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

// keyspaceUsage lists the keyspace subcommands.
const keyspaceUsage = `keyspace create NAME (--replication dc1=2,dc2=1 | --erasure M,K) [--partitioner grouped|hash|ordered]
       keyspace list
       keyspace describe NAME
       keyspace alter NAME (--replication dc1=3,dc2=1 | --settle)
       keyspace truncate NAME
       keyspace drop NAME
Run 'kura keyspace SUBCOMMAND --help' for its flags.`

// keyspaceSubcommands are the subcommands runKeyspace knows.
var keyspaceSubcommands = []string{"create", "list", "describe", "alter", "truncate", "drop"}

func runKeyspace(args []string, stdout, stderr io.Writer) error {
	switch {
	case len(args) == 0:
		return fmt.Errorf("%w: %s", errUsage, keyspaceUsage)
	case isHelp(args[0]):
		fmt.Fprintf(stderr, "Usage: kura %s\n", keyspaceUsage)
		return flag.ErrHelp
	case !slices.Contains(keyspaceSubcommands, args[0]):
		return fmt.Errorf("%w: unknown keyspace subcommand %q: want one of %s", errUsage, args[0], strings.Join(keyspaceSubcommands, ", "))
	case args[0] == "alter":
		return runKeyspaceAlter(args[1:], stdout, stderr)
	}
	fs := newFlagSet("keyspace "+args[0], stderr)
	cf := addClientFlags(fs)
	replication := fs.String("replication", "", `replicas per DC ("dc1=2,dc2=1") or in all ("simple=3")`)
	partitioner := fs.String("partitioner", "", "grouped (the default: uniform, keys of one Redis hash tag {...} on one replica set), hash (uniform, by the whole key) or ordered (order-preserving, for range scans)")
	erasureCode := fs.String("erasure", "", `erasure-code values instead of replicating them: "M,K" stores M chunks, any K of which rebuild a value (e.g. 6,4)`)
	keySample := fs.String("key-sample", "", "with --partitioner ordered: a file of sample keys, one per line, to balance the nodes by (split keys at its quantiles)")
	splits := fs.Int("splits", defaultSplits, "with --key-sample: how many split keys to take from the sample")
	transactions := fs.String("transactions", "", "where lightweight transactions run: key (the default, a Paxos instance per key) or partition (one per hash tag, so that MULTI/EXEC covers several keys of a tag; fixed at creation, needs the grouped partitioner)")
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	if err := checkKeyspaceArgs(args[0], pos, *replication, *erasureCode); err != nil {
		return err
	}
	var splitKeys [][]byte
	if *keySample != "" {
		if splitKeys, err = splitsFromFile(*keySample, *partitioner, *erasureCode, *splits); err != nil {
			return err
		}
	}
	return cf.withClient(func(ctx context.Context, c *client.Client, _ consistency.Level) error {
		err := keyspaceCommand(ctx, c, args[0], pos, client.KeyspaceSpec{Replication: *replication, Partitioner: *partitioner, Splits: splitKeys, Transactions: *transactions}, *erasureCode, stdout)
		if client.IsNotFound(err) && len(pos) == 1 {
			// Not wrapped, so that withClient does not suggest creating --keyspace.
			return fmt.Errorf("no such keyspace %q: kura keyspace list shows the keyspaces there are", pos[0])
		}
		return err
	})
}

// defaultSplits is how many split keys a key sample or a rebalance gives unless --splits
// says otherwise: the node's own default for a rebalance.
const defaultSplits = rebalance.DefaultSplits

// splitsFromFile reads a key sample, one key per line, and returns its split keys.
func splitsFromFile(path, partitioner, erasureCode string, n int) ([][]byte, error) {
	switch {
	case partitioner != "ordered":
		return nil, fmt.Errorf("%w: --key-sample balances the ordered partitioner; add --partitioner ordered (grouped and hash spread keys by themselves)", errUsage)
	case erasureCode != "":
		return nil, fmt.Errorf("%w: --key-sample with --erasure: an erasure-coded keyspace places each chunk by its own hash", errUsage)
	case n < 1 || n > schema.MaxSplits:
		return nil, fmt.Errorf("%w: --splits %d: want 1 to %d", errUsage, n, schema.MaxSplits)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("key sample: %w", err)
	}
	defer f.Close()
	var keys [][]byte
	lines := bufio.NewScanner(f)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		if key := bytes.TrimSuffix(lines.Bytes(), []byte("\r")); len(key) > 0 {
			keys = append(keys, bytes.Clone(key))
		}
	}
	if err := lines.Err(); err != nil {
		return nil, fmt.Errorf("key sample %s: %w", path, err)
	}
	splits := schema.SplitsFromSample(keys, n)
	if len(splits) == 0 {
		return nil, fmt.Errorf("%w: key sample %s holds no keys (one per line)", errUsage, path)
	}
	return splits, nil
}

// keyspaceCommand runs one keyspace subcommand.
// checkKeyspaceArgs checks a keyspace subcommand's arguments before anything dials.
func checkKeyspaceArgs(sub string, pos []string, replication, erasureCode string) error {
	switch {
	case sub == "create" && (len(pos) != 1 || (replication == "") == (erasureCode == "")):
		return fmt.Errorf("%w: keyspace create NAME (--replication dc1=2,dc2=1 | --erasure M,K) [--partitioner grouped|hash|ordered [--key-sample FILE [--splits N]]] [--transactions key|partition]", errUsage)
	case sub == "list" && len(pos) != 0:
		return fmt.Errorf("%w: keyspace list takes no arguments", errUsage)
	case sub != "create" && sub != "list" && len(pos) != 1:
		return fmt.Errorf("%w: keyspace %s NAME", errUsage, sub)
	}
	return nil
}

// keyspaceCommand runs a keyspace subcommand whose arguments checkKeyspaceArgs accepted;
// spec holds create's options but the name.
func keyspaceCommand(ctx context.Context, c *client.Client, sub string, pos []string, spec client.KeyspaceSpec, erasureCode string, stdout io.Writer) error {
	switch sub {
	case "create":
		spec.Name = pos[0]
		if erasureCode != "" && spec.Transactions != "" {
			return fmt.Errorf("%w: --transactions with --erasure: an erasure-coded keyspace takes no lightweight transaction", errUsage)
		}
		if erasureCode != "" {
			code, err := schema.ParseErasure(erasureCode)
			if err != nil {
				return fmt.Errorf("%w: %v", errUsage, err)
			}
			err = c.CreateErasureKeyspace(ctx, pos[0], code.M, code.K, spec.Partitioner)
			if err != nil {
				return err
			}
		} else if err := c.CreateKeyspaceWith(ctx, spec); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "keyspace %s created", pos[0])
		if len(spec.Splits) > 0 {
			fmt.Fprintf(stdout, " with %d split keys from the sample", len(spec.Splits))
		}
		fmt.Fprintln(stdout)
		return nil
	case "list":
		list, err := c.Keyspaces(ctx)
		if err != nil {
			return err
		}
		for _, ks := range list {
			fmt.Fprintf(stdout, "%s\treplication=%s\tpartitioner=%s", ks.GetName(), ks.GetReplication(), ks.GetPartitioner())
			if e := ks.GetErasure(); e != nil {
				fmt.Fprintf(stdout, "\terasure=%d,%d", e.GetM(), e.GetK())
			}
			if n := len(ks.GetSplits()); n > 0 {
				fmt.Fprintf(stdout, "\tsplits=%d", n)
			}
			if ks.GetMoving() {
				fmt.Fprint(stdout, "\trebalancing")
			}
			fmt.Fprintln(stdout)
		}
		return nil
	case "describe":
		ks, err := c.Keyspace(ctx, pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "name: %s\nreplication: %s\npartitioner: %s\n", ks.GetName(), ks.GetReplication(), ks.GetPartitioner())
		switch {
		case ks.GetCollectionInstances():
			fmt.Fprintln(stdout, "transactions: partition (a Paxos instance per hash tag; a collection's elements on their collection's)")
		case ks.GetTransactions() == schema.TransactionsPartition:
			fmt.Fprintln(stdout, "transactions: partition (a Paxos instance per hash tag; a collection's elements each on their own)")
		}
		if e := ks.GetErasure(); e != nil {
			fmt.Fprintf(stdout, "erasure: %d,%d (%d chunks per value, any %d rebuild it)\n", e.GetM(), e.GetK(), e.GetM(), e.GetK())
		}
		if splits := ks.GetSplits(); len(splits) > 0 {
			fmt.Fprintf(stdout, "split keys: %d, from %s to %s\n", len(splits), printable(splits[0]), printable(splits[len(splits)-1]))
		}
		switch {
		case ks.GetNextReplication() != "":
			fmt.Fprintf(stdout, "altering: writes also go to the replicas under replication %s\n", ks.GetNextReplication())
		case ks.GetMoving():
			fmt.Fprintf(stdout, "rebalancing: writes also go to the replicas under %d next split keys\n", len(ks.GetNextSplits()))
		}
		return nil
	case "truncate":
		ts, err := c.TruncateKeyspace(ctx, pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "keyspace %s truncated at %s: values written before it are gone\n", pos[0], ts.WallTime().UTC().Format(time.RFC3339Nano))
		return nil
	case "drop":
		ts, err := c.DropKeyspace(ctx, pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "keyspace %s dropped at %s, with its values\n", pos[0], ts.WallTime().UTC().Format(time.RFC3339Nano))
		return nil
	}
	return fmt.Errorf("%w: unknown keyspace subcommand %q: want one of %s", errUsage, sub, strings.Join(keyspaceSubcommands, ", "))
}
