// Package promscrape reads the Prometheus text exposition for tests: it
// scrapes a URL, parses the families, and lists their series and values.
package promscrape

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families are parsed metric families by name.
type Families map[string]*dto.MetricFamily

// Get scrapes url (plain text, no compression) and parses the answer. It
// fails on a status other than 200 or a body that does not parse.
func Get(ctx context.Context, client *http.Client, url string) (Families, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	res, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<10))
		return nil, fmt.Errorf("GET %s: %s: %s", url, res.Status, b)
	}
	return Parse(res.Body)
}

// Parse parses a text exposition.
func Parse(r io.Reader) (Families, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	return Families(fams), err
}

// Series lists the series of the families whose names start with prefix,
// sorted, as name{label="value",...} (a histogram's once per label set,
// under its family name).
func (f Families) Series(prefix string) []string {
	var out []string
	for name, fam := range f {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		for _, m := range fam.GetMetric() {
			out = append(out, name+labelString(m))
		}
	}
	slices.Sort(out)
	return out
}

// LabelNames returns the sorted label names of each series of family
// name, deduplicated: one entry per distinct set.
func (f Families) LabelNames(name string) [][]string {
	var out [][]string
	for _, m := range f[name].GetMetric() {
		var names []string
		for _, l := range m.GetLabel() {
			names = append(names, l.GetName())
		}
		slices.Sort(names)
		if !slices.ContainsFunc(out, func(s []string) bool { return slices.Equal(s, names) }) {
			out = append(out, names)
		}
	}
	return out
}

// Value returns the value of the series of family name whose labels
// include every pair of labels (for a histogram, its sample count), and
// whether one matched; several matches add up.
func (f Families) Value(name string, labels ...string) (float64, bool) {
	var sum float64
	found := false
	for _, m := range f[name].GetMetric() {
		if !hasLabels(m, labels) {
			continue
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum, found
}

func hasLabels(m *dto.Metric, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
			return l.GetName() == pairs[i] && l.GetValue() == pairs[i+1]
		}) {
			return false
		}
	}
	return true
}

func labelString(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ",") + "}"
}
