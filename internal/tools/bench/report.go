package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxWidth is the most columns a line of a bench's text output takes, so that it reads
// in a terminal without wrapping; whatever has no room is in the JSON (--json).
const MaxWidth = 120

// Report is a bench's result. Rows is a slice of structs whose JSON field names follow the
// project's convention (snake_case, unit last); the table shows those fields, each under
// its JSON name, written in the one number format of format.go. The text output is for
// people and never wider than MaxWidth; the JSON has every field:
//   - a field tagged `table:"-"` is in the JSON only, for detail the table has no room for;
//   - a field tagged `table:"group"` (e.g. the mix a run used) is not a column: the table
//     prints it in a heading above each run of rows that share its value;
//   - an embedded struct tagged with a list of its fields' JSON names, `table:"a,b,c"`,
//     shows those of its fields only (for a row type of another package, whose fields
//     this package cannot tag).
//
// A long name is broken after its underscores over up to three header lines, so that a
// column is hardly wider than its values. Should the chosen columns still not fit, a last
// column of text (events, a description) is wrapped within the width left, or else the
// last columns are left out of the table and named under it; the test in
// readable_test.go keeps every bench's chosen columns within MaxWidth. Fits, Reduction
// and Summary are printed as tables when they are slices of structs, else as lists of
// names and values; scale and notes are wrapped at MaxWidth.
type Report struct {
	Bench string `json:"bench"`
	// Environment says where the figures came from (the build, the machine, its load,
	// the command line, the peers' versions); kura bench sets it on every report.
	Environment *Environment   `json:"environment,omitempty"`
	Scale       string         `json:"scale"`
	Rows        any            `json:"rows"`
	Fits        any            `json:"fits,omitempty"`
	Reduction   any            `json:"reduction,omitempty"`
	Summary     map[string]any `json:"summary,omitempty"`
	// Notes are printed under the table (what a reader must know to read it).
	Notes []string `json:"-"`
	// Plot draws the report's figure to a PNG file; nil when the bench has none.
	Plot func(path string) error `json:"-"`
}

// WriteJSON writes the report as one JSON object, and nothing else.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report for people: the scale, one table row per row, then the
// fits, reduction, summary and notes, no line wider than MaxWidth.
func (r *Report) WriteTable(w io.Writer) error {
	out := &textWriter{w: w}
	out.line("bench " + r.Bench)
	if e := r.Environment; e != nil {
		out.wrapped("environment: ", e.headline())
		for _, p := range e.Peers {
			out.wrapped("peer: ", strings.TrimSuffix(p.Name+" "+p.Version+"; "+p.Config, "; "))
		}
	}
	out.wrapped("scale: ", r.Scale)
	out.line("")
	writeRows(out, r.Rows)
	for _, section := range []struct {
		title string
		value any
	}{{"fits", r.Fits}, {"reduction", r.Reduction}, {"summary", r.Summary}} {
		if section.value == nil || reflect.ValueOf(section.value).IsZero() {
			continue
		}
		out.line("")
		writeSection(out, section.title, reflect.ValueOf(section.value))
	}
	for _, n := range r.Notes {
		out.line("")
		out.wrapped("note: ", n)
	}
	return out.err
}

// textWriter writes lines, keeping the first error.
type textWriter struct {
	w   io.Writer
	err error
}

func (t *textWriter) line(s string) {
	if t.err == nil {
		_, t.err = io.WriteString(t.w, s+"\n")
	}
}

// wrapped writes prefix and text as lines of at most MaxWidth, breaking between words;
// the lines after the first are indented as deep as the prefix.
func (t *textWriter) wrapped(prefix, text string) {
	for _, l := range wrap(prefix, text) {
		t.line(l)
	}
}

// wrap breaks prefix+text into lines of at most MaxWidth between words (a word longer
// than a line gets a line of its own), indenting the lines after the first as deep as
// the prefix.
func wrap(prefix, text string) []string {
	indent := strings.Repeat(" ", utf8.RuneCountInString(prefix))
	var lines []string
	current := prefix
	empty := true // current holds no word yet
	for _, word := range unbroken(strings.Fields(text)) {
		if !empty && utf8.RuneCountInString(current)+1+utf8.RuneCountInString(word) > MaxWidth {
			lines = append(lines, current)
			current, empty = indent, true
		}
		if !empty {
			current += " "
		}
		current += word
		empty = false
	}
	return append(lines, strings.TrimRight(current, " "))
}

// unbroken joins a number and the short unit after it (10 s, 1.5 %, 64 KB) into one
// word, so that no line ends with a figure whose unit starts the next.
func unbroken(words []string) []string {
	var out []string
	for _, w := range words {
		if n := len(out); n > 0 && len(w) <= 3 && !unicode.IsDigit([]rune(w)[0]) &&
			unicode.IsDigit([]rune(out[n-1])[utf8.RuneCountInString(out[n-1])-1]) {
			out[n-1] += " " + w
			continue
		}
		out = append(out, w)
	}
	return out
}

// writeSection writes a titled part of the report: a table when v is a slice of structs,
// else a list of names and values (nested structs and maps flattened with dotted names),
// followed by a table for each slice of structs among the values.
func writeSection(out *textWriter, title string, v reflect.Value) {
	if isStructSlice(v) {
		out.line(title + ":")
		writeRows(out, v.Interface())
		return
	}
	var items []item
	var tables []item
	flatten("", v, &items, &tables)
	out.line(title + ":")
	keyWidth := 0
	for _, it := range items {
		keyWidth = max(keyWidth, utf8.RuneCountInString(it.name))
	}
	for _, it := range items {
		pad := strings.Repeat(" ", keyWidth-utf8.RuneCountInString(it.name))
		out.wrapped("  "+it.name+pad+"  ", formatValue(lastName(it.name), it.value))
	}
	for _, table := range tables {
		out.line("")
		out.line(title + "." + table.name + ":")
		writeRows(out, table.value.Interface())
	}
}

// item is one named value of a section.
type item struct {
	name  string
	value reflect.Value
}

// lastName is the field's own name in a dotted path, which picks its number format.
func lastName(path string) string {
	return path[strings.LastIndex(path, ".")+1:]
}

// flatten lists v's values under dotted names: the fields of a struct by JSON name, the
// entries of a map by sorted key, recursively; slices of structs go to tables.
func flatten(prefix string, v reflect.Value, items, tables *[]item) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			*items = append(*items, item{prefix, v})
			return
		}
		v = v.Elem()
	}
	join := func(name string) string {
		if prefix == "" {
			return name
		}
		return prefix + "." + name
	}
	switch {
	case v.Kind() == reflect.Struct:
		for _, c := range jsonFields(v.Type(), nil) {
			flatten(join(c.name), v.FieldByIndex(c.index), items, tables)
		}
	case v.Kind() == reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			flatten(join(fmt.Sprint(k)), v.MapIndex(k), items, tables)
		}
	case isStructSlice(v) && v.Len() > 0:
		*tables = append(*tables, item{prefix, v})
	default:
		*items = append(*items, item{prefix, v})
	}
}

// isStructSlice reports whether v is a slice of structs (or of pointers to structs).
func isStructSlice(v reflect.Value) bool {
	for v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Slice {
		return false
	}
	elem := v.Type().Elem()
	for elem.Kind() == reflect.Pointer {
		elem = elem.Elem()
	}
	return elem.Kind() == reflect.Struct
}

// writeRows prints a slice of structs as an aligned table, one column per shown field
// (see Report), numbers to the right and text to the left; the group fields' values head
// each run of rows that share them, and every run gets the column names again, so that
// it reads on its own. Columns that do not fit MaxWidth are named under the table.
func writeRows(out *textWriter, rows any) {
	v := reflect.ValueOf(rows)
	if v.Kind() != reflect.Slice {
		if out.err == nil {
			out.err = fmt.Errorf("bench: rows must be a slice, not %T", rows)
		}
		return
	}
	if v.Len() == 0 {
		out.line("(no rows)")
		return
	}
	elem := v.Type().Elem()
	for elem.Kind() == reflect.Pointer {
		elem = elem.Elem()
	}
	var columns, groups []column
	for _, c := range tableColumns(elem, nil) {
		if c.group {
			groups = append(groups, c)
		} else {
			columns = append(columns, c)
		}
	}
	headings := make([]string, v.Len())
	cells := make([][]string, v.Len())
	widths := make([]int, len(columns))
	for i := range v.Len() {
		row := v.Index(i)
		for row.Kind() == reflect.Pointer {
			row = row.Elem()
		}
		parts := make([]string, len(groups))
		for j, g := range groups {
			parts[j] = g.name + " " + formatValue(g.name, row.FieldByIndex(g.index))
		}
		headings[i] = strings.Join(parts, ", ")
		cells[i] = make([]string, len(columns))
		for j, c := range columns {
			cells[i][j] = formatValue(c.name, row.FieldByIndex(c.index))
			widths[j] = max(widths[j], utf8.RuneCountInString(cells[i][j]))
		}
	}
	// A long name is broken after its underscores into a header of up to headerLines
	// lines, so that it widens its column no more than its values do.
	header := make([][]string, len(columns))
	depth := 1
	for j, c := range columns {
		header[j] = splitName(c.name, widths[j])
		for _, part := range header[j] {
			widths[j] = max(widths[j], utf8.RuneCountInString(part))
		}
		depth = max(depth, len(header[j]))
	}
	// The columns that fit, two spaces between two of them.
	shown, total := 0, -2
	for shown < len(columns) && total+2+widths[shown] <= MaxWidth {
		total += 2 + widths[shown]
		shown++
	}
	// A last column of text that alone does not fit (events, a description) gets the
	// width left, its values wrapped onto further lines.
	if last := len(columns) - 1; shown == last && !columns[last].numeric && MaxWidth-total-2 >= minTextWidth {
		widths[last] = MaxWidth - total - 2
		shown++
	}
	shown = max(shown, 1)
	line := func(values []string) string {
		var b strings.Builder
		for j := range shown {
			if j > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[j]-utf8.RuneCountInString(values[j]))
			if columns[j].numeric {
				b.WriteString(pad + values[j])
			} else {
				b.WriteString(values[j] + pad)
			}
		}
		return strings.TrimRight(b.String(), " ")
	}
	// The header's lines, the names' last parts on the last line.
	headerRows := make([][]string, depth)
	for k := range headerRows {
		headerRows[k] = make([]string, len(columns))
		for j := range columns {
			if at := k - (depth - len(header[j])); at >= 0 {
				headerRows[k][j] = header[j][at]
			}
		}
	}
	names := make([]string, len(columns))
	for j, c := range columns {
		names[j] = c.name
	}
	for i := range cells {
		if i == 0 || headings[i] != headings[i-1] {
			if headings[i] != "" {
				if i > 0 {
					out.line("")
				}
				out.wrapped("", headings[i])
			}
			for _, h := range headerRows {
				out.line(line(h))
			}
		}
		// A cell wider than its column (only a last column of text) goes on below.
		for k := 0; ; k++ {
			values := make([]string, len(columns))
			more := false
			for j := range shown {
				parts := wrapText(cells[i][j], widths[j])
				if k < len(parts) {
					values[j] = parts[k]
				}
				more = more || k+1 < len(parts)
			}
			out.line(line(values))
			if !more {
				break
			}
		}
	}
	if shown < len(columns) {
		out.wrapped("(only in --json: ", strings.Join(names[shown:], ", ")+")")
	}
}

// minTextWidth is the narrowest a last column of text is made to fit the table.
const minTextWidth = 16

// wrapText breaks s into lines of at most width between words, a word longer than a line
// cut; s when it fits.
func wrapText(s string, width int) []string {
	if utf8.RuneCountInString(s) <= width {
		return []string{s}
	}
	var lines []string
	current := ""
	for _, word := range strings.Fields(s) {
		for utf8.RuneCountInString(word) > width {
			if current != "" {
				lines, current = append(lines, current), ""
			}
			r := []rune(word)
			lines, word = append(lines, string(r[:width])), string(r[width:])
		}
		switch {
		case current == "":
			current = word
		case utf8.RuneCountInString(current)+1+utf8.RuneCountInString(word) <= width:
			current += " " + word
		default:
			lines, current = append(lines, current), word
		}
	}
	return append(lines, current)
}

// headerLines is the most lines a column's name is broken into.
const headerLines = 3

// splitName breaks a field's name after underscores into at most headerLines parts, each
// as wide as width allows (widened as much as the name needs): "latency_ms_mean" at width
// 8 is "latency_" over "ms_mean". Each part but the last keeps its underscore, so the name
// reads whole, as the JSON has it.
func splitName(name string, width int) []string {
	tokens := strings.SplitAfter(name, "_")
	for _, t := range tokens {
		width = max(width, utf8.RuneCountInString(t))
	}
	for {
		var parts []string
		for _, t := range tokens {
			if n := len(parts); n > 0 && utf8.RuneCountInString(parts[n-1])+utf8.RuneCountInString(t) <= width {
				parts[n-1] += t
				continue
			}
			parts = append(parts, t)
		}
		if len(parts) <= headerLines {
			return parts
		}
		width++
	}
}

// column is one table column: a JSON field name and where the field sits in the row;
// group marks a field tagged `table:"group"`, printed in headings rather than as a
// column, and numeric a number, aligned to the right.
type column struct {
	name    string
	index   []int
	group   bool
	numeric bool
}

// tableColumns lists the fields of a row type the table shows, in order (see Report).
func tableColumns(t reflect.Type, prefix []int) []column {
	var out []column
	for _, c := range jsonFields(t, prefix) {
		if c.tag == "-" {
			continue
		}
		out = append(out, c.column)
	}
	return out
}

// field is a JSON-named field of a row type, with its table tag.
type field struct {
	column
	tag string
}

// jsonFields lists the JSON-named fields of a struct type in order, flattening embedded
// structs as encoding/json does; an embedded struct's `table:"a,b"` list marks its other
// fields `table:"-"` (a name not among them is a programming error: it panics).
func jsonFields(t reflect.Type, prefix []int) []field {
	var out []field
	for i := range t.NumField() {
		f := t.Field(i)
		index := append(append([]int(nil), prefix...), i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		tag := f.Tag.Get("table")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			inner := jsonFields(f.Type, index)
			if tag != "" {
				only := strings.Split(tag, ",")
				for _, name := range only {
					if !slices.ContainsFunc(inner, func(g field) bool { return g.name == name }) {
						panic(fmt.Sprintf("bench: %s has no field %q for its table tag", f.Type, name))
					}
				}
				for k := range inner {
					if !slices.Contains(only, inner[k].name) {
						inner[k].tag = "-"
					}
				}
			}
			out = append(out, inner...)
			continue
		}
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		kind := f.Type.Kind()
		if kind == reflect.Pointer {
			kind = f.Type.Elem().Kind()
		}
		numeric := kind >= reflect.Int && kind <= reflect.Float64
		out = append(out, field{column{name: name, index: index, group: tag == "group", numeric: numeric}, tag})
	}
	return out
}
