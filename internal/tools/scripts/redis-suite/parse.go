package main

import (
	"bufio"
	"io"
	"regexp"
	"strings"
)

// Test outcomes as the suite's test server prints them (tests/test_helper.tcl,
// read_from_test_client).
const (
	statusOK      = "ok"
	statusErr     = "err"
	statusSkip    = "skip"    // --skiptest / --only
	statusIgnore  = "ignore"  // a tag the run denies, or external:skip, singledb:skip
	statusAborted = "aborted" // the unit stopped before the test ran
)

// testResult is one line of the suite's output about one test (or, for an ignore
// line of a whole start_server block, about the block).
type testResult struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	// Error is the first line of the failure (err) or the reason it did not run
	// (skip, ignore).
	Error string `json:"error,omitempty"`
}

// unitOutput is what one run of one unit printed: its tests in order, and the
// exception that stopped the unit early, if one did.
type unitOutput struct {
	Tests     []testResult
	Exception string
	Done      bool // the test server printed the unit's "done" line
}

var (
	statusLine = regexp.MustCompile(`^\[([a-zA-Z0-9/ ]+)\]: (.*)$`)
	okSuffix   = regexp.MustCompile(` \(\d+ ms\)$`)
	errSuffix  = regexp.MustCompile(` in tests/\S+\.tcl$`)
	// ignoreReason ends an ignore line: the reasons tags_acceptable (tests/support/server.tcl) gives.
	ignoreReason = regexp.MustCompile(`^(?:(.*): )?(Tag: .*|Not supported .*|large memory flag not provided)$`)
	doneLine     = regexp.MustCompile(`^\d+/\d+ done$`)
)

// parseOutput reads the suite's output (TERM not xterm, so without colours).
func parseOutput(r io.Reader) (unitOutput, error) {
	var out unitOutput
	var lines []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return out, err
	}
	for i, line := range lines {
		m := statusLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		status, data := m[1], m[2]
		switch {
		case status == statusOK:
			out.Tests = append(out.Tests, testResult{Name: okSuffix.ReplaceAllString(data, ""), Status: statusOK})
		case status == statusErr:
			out.Tests = append(out.Tests, testResult{Name: errSuffix.ReplaceAllString(data, ""), Status: statusErr, Error: failureLine(detailLines(lines[i+1:]))})
		case status == statusSkip:
			out.Tests = append(out.Tests, testResult{Name: data, Status: statusSkip, Error: "--skiptest"})
		case status == statusIgnore:
			t := testResult{Name: data, Status: statusIgnore}
			if im := ignoreReason.FindStringSubmatch(data); im != nil {
				t.Name, t.Error = im[1], im[2]
			}
			out.Tests = append(out.Tests, t)
		case status == "exception":
			out.Exception = strings.TrimPrefix(data, "Executing test client: ")
			if out.Exception == "" && i+1 < len(lines) {
				out.Exception = lines[i+1]
			}
		case doneLine.MatchString(status):
			out.Done = true
		}
	}
	return out, nil
}

// detailLines are the lines after an [err] line up to the next status line: at most
// the two the failure's first line is taken from.
func detailLines(rest []string) []string {
	var d []string
	for _, l := range rest {
		if statusLine.MatchString(l) || len(d) == 2 {
			break
		}
		d = append(d, l)
	}
	return d
}

// failureLine picks the failure's first line from an [err]'s details. An assertion
// prints its message; any other error (a Redis error reply under --durable) prints the
// message with its first 10 characters cut (test.tcl strips "assertion:" from every
// error), then the Tcl errorInfo, whose first line is the whole message.
func failureLine(details []string) string {
	switch {
	case len(details) == 0:
		return ""
	case len(details) == 2 && len(details[1]) > len(details[0]) && strings.HasSuffix(details[1], details[0]) && details[0] != "":
		return details[1]
	default:
		return details[0]
	}
}

var (
	// The error may stand alone or be quoted in an assertion's "Expected '-ERR ...' to
	// be equal to ..." (a test reading the raw reply).
	unknownCommand    = regexp.MustCompile(`(?:^|'-?)ERR unknown command '([^']*)'`)
	unknownSubcommand = regexp.MustCompile(`(?:^|'-?)ERR unknown subcommand '([^']*)'\. Try (\S+) HELP`)
	configSetRefused  = regexp.MustCompile(`(?:^|'-?)ERR (?:Unknown option or number of arguments for CONFIG SET - '([^']*)'|CONFIG SET failed \(possibly related to argument '([^']*)'\))`)
)

// cause groups a failure by what kura lacks: a command, a subcommand, a CONFIG SET
// parameter; every other failure is its own cause, "other".
func cause(errLine string) string {
	if m := unknownCommand.FindStringSubmatch(errLine); m != nil {
		return "unknown command " + strings.ToUpper(m[1])
	}
	if m := unknownSubcommand.FindStringSubmatch(errLine); m != nil {
		return "unknown subcommand " + m[2] + " " + strings.ToUpper(m[1])
	}
	if m := configSetRefused.FindStringSubmatch(errLine); m != nil {
		return "CONFIG SET " + m[1] + m[2] + " refused"
	}
	return "other"
}
