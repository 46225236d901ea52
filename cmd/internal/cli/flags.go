// Package cli is what kura's commands share on their command lines: flags that may follow
// positional arguments, and errors that name the flag meant.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// ErrUsage marks an error in the command line; the commands exit 2 for it.
var ErrUsage = errors.New("usage")

// NewFlagSet returns a flag set, named as its command line starts ("kura get"), that
// reports errors instead of exiting.
func NewFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// ParseFlags parses args, letting flags follow positional arguments too
// ("kura get KEY --addr X"), and returns the positional ones. A wrong flag is reported in
// one line, with the closest flag's name or a duration's missing unit, not above the
// whole list of flags, which --help prints.
func ParseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	out := fs.Output()
	for {
		// The flag package prints its error and the usage itself; the error alone
		// comes back here, explained.
		fs.SetOutput(io.Discard)
		err := fs.Parse(args)
		fs.SetOutput(out)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(out, "Usage of %s:\n", fs.Name())
			fs.PrintDefaults()
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUsage, explainFlagError(fs, err))
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		if args[0] == "--" {
			return append(positional, args[1:]...), nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// explainFlagError adds to the flag package's error what its reader needs next: the
// closest known flag to an unknown one, the unit a duration lacks, and where the flags
// are listed.
func explainFlagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		name = strings.TrimLeft(name, "-")
		if closest := ClosestFlag(fs, name); closest != "" {
			return fmt.Sprintf("unknown flag --%s; did you mean --%s? (%s --help lists the flags)", name, closest, fs.Name())
		}
		return fmt.Sprintf("unknown flag --%s (%s --help lists the flags)", name, fs.Name())
	}
	var name string
	if _, rest, found := strings.Cut(msg, " for flag -"); found {
		name, _, _ = strings.Cut(rest, ":")
	}
	if f := fs.Lookup(name); f != nil {
		if getter, ok := f.Value.(flag.Getter); ok {
			if _, isDuration := getter.Get().(time.Duration); isDuration {
				return fmt.Sprintf("%s: --%s takes a duration with its unit, e.g. 10s, 500ms or 2m", msg, name)
			}
		}
	}
	return msg
}

// ClosestFlag returns the defined flag whose name is nearest to name (at most a third of
// its letters different), or "".
func ClosestFlag(fs *flag.FlagSet, name string) string {
	best, bestDistance := "", len(name)/3+1
	fs.VisitAll(func(f *flag.Flag) {
		if d := editDistance(name, f.Name); d < bestDistance || (d == bestDistance && best != "" && f.Name < best) {
			best, bestDistance = f.Name, d
		}
	})
	return best
}

// editDistance is the Levenshtein distance between a and b: the fewest letters to insert,
// delete or change to turn one into the other.
func editDistance(a, b string) int {
	previous := make([]int, len(b)+1)
	for j := range previous {
		previous[j] = j
	}
	for i := 1; i <= len(a); i++ {
		current := make([]int, len(b)+1)
		current[0] = i
		for j := 1; j <= len(b); j++ {
			change := previous[j-1]
			if a[i-1] != b[j-1] {
				change++
			}
			current[j] = min(previous[j]+1, current[j-1]+1, change)
		}
		previous = current
	}
	return previous[len(b)]
}
