package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Report is a bench's result. Rows is a slice of structs whose JSON field names follow the
// project's convention (snake_case, unit last); the table shows the same fields. A field
// tagged `table:"group"` (e.g. the mix a run used) is not a column: the table prints it in
// a heading above each run of rows that share its value, which keeps a table of many such
// fields narrow; a field tagged `table:"-"` is in the JSON only, for detail the table has
// no room for. Reduction, too, is printed as such a table when it is a slice of structs.
type Report struct {
	Bench     string         `json:"bench"`
	Scale     string         `json:"scale"`
	Rows      any            `json:"rows"`
	Fits      any            `json:"fits,omitempty"`
	Reduction any            `json:"reduction,omitempty"`
	Summary   map[string]any `json:"summary,omitempty"`
	// Notes are printed under the table (what a reader must know to read it).
	Notes []string `json:"-"`
	// Plot draws the report's figure to a PNG file; nil when the bench has none.
	Plot func(path string) error `json:"-"`
}

// WriteJSON writes the report as one JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report for people: the scale, one table row per row, then the
// fits, reduction, summary and notes.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "bench %s\nscale: %s\n\n", r.Bench, r.Scale)
	if err := writeRows(w, r.Rows); err != nil {
		return err
	}
	for _, extra := range []struct {
		title string
		value any
	}{{"fits", r.Fits}, {"reduction", r.Reduction}, {"summary", r.Summary}} {
		if extra.value == nil || reflect.ValueOf(extra.value).IsZero() {
			continue
		}
		if extra.title == "reduction" && isStructSlice(extra.value) {
			fmt.Fprintf(w, "\n%s:\n", extra.title)
			if err := writeRows(w, extra.value); err != nil {
				return err
			}
			continue
		}
		b, err := json.MarshalIndent(extra.value, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "\n%s: %s\n", extra.title, b)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "\nnote: %s\n", n)
	}
	return nil
}

// isStructSlice reports whether v is a slice of structs (or of pointers to structs).
func isStructSlice(v any) bool {
	t := reflect.TypeOf(v)
	if t.Kind() != reflect.Slice {
		return false
	}
	elem := t.Elem()
	for elem.Kind() == reflect.Pointer {
		elem = elem.Elem()
	}
	return elem.Kind() == reflect.Struct
}

// writeRows prints a slice of structs as an aligned table, one column per JSON field but
// the group fields, whose values head each run of rows that share them; every run gets
// the column names again, so that it reads on its own.
func writeRows(w io.Writer, rows any) error {
	v := reflect.ValueOf(rows)
	if v.Kind() != reflect.Slice {
		return fmt.Errorf("bench: rows must be a slice, not %T", rows)
	}
	if v.Len() == 0 {
		_, err := fmt.Fprintln(w, "(no rows)")
		return err
	}
	elem := v.Index(0)
	for elem.Kind() == reflect.Pointer {
		elem = elem.Elem()
	}
	var columns, groups []column
	for _, c := range tableColumns(elem.Type(), nil) {
		if c.group {
			groups = append(groups, c)
		} else {
			columns = append(columns, c)
		}
	}
	headers := make([]string, len(columns))
	for i, c := range columns {
		headers[i] = c.name
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	heading := ""
	for i := 0; i < v.Len(); i++ {
		row := v.Index(i)
		for row.Kind() == reflect.Pointer {
			row = row.Elem()
		}
		parts := make([]string, len(groups))
		for j, g := range groups {
			parts[j] = g.name + " " + formatCell(row.FieldByIndex(g.index))
		}
		if h := strings.Join(parts, ", "); i == 0 || h != heading {
			if err := tw.Flush(); err != nil {
				return err
			}
			if h != "" {
				if i > 0 {
					fmt.Fprintln(w)
				}
				fmt.Fprintln(w, h)
			}
			heading = h
			fmt.Fprintln(tw, strings.Join(headers, "\t")+"\t")
		}
		cells := make([]string, len(columns))
		for j, c := range columns {
			cells[j] = formatCell(row.FieldByIndex(c.index))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	return tw.Flush()
}

// column is one table column: a JSON field name and where the field sits in the row;
// group marks a field tagged `table:"group"`, printed in headings rather than as a column.
type column struct {
	name  string
	index []int
	group bool
}

// tableColumns lists the JSON-named fields of a row type in order, flattening embedded
// structs as encoding/json does, so a row that embeds another shows all its columns.
func tableColumns(t reflect.Type, prefix []int) []column {
	var out []column
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		index := append(append([]int(nil), prefix...), i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, tableColumns(f.Type, index)...)
			continue
		}
		if name == "" || name == "-" || !f.IsExported() || f.Tag.Get("table") == "-" {
			continue
		}
		out = append(out, column{name: name, index: index, group: f.Tag.Get("table") == "group"})
	}
	return out
}

func formatCell(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		switch {
		case f == 0:
			return "0"
		case f >= 1e6 || f <= -1e6:
			return strconv.FormatFloat(f, 'g', 4, 64)
		case f >= 100 || f <= -100:
			return strconv.FormatFloat(f, 'f', 0, 64)
		default:
			return strconv.FormatFloat(f, 'g', 4, 64)
		}
	case reflect.Pointer:
		if v.IsNil() {
			return "-"
		}
		return formatCell(v.Elem())
	}
	return fmt.Sprint(v.Interface())
}
