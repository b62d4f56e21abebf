package promexport

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/metrics"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// dashboardFile is the Grafana dashboard for this exporter's metrics.
const dashboardFile = "grafana/daqiri.json"

// promQLWords are PromQL's keywords and aggregation modifiers: identifiers that are neither
// metrics nor labels.
var promQLWords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "offset": true, "and": true, "or": true, "unless": true, "atan2": true, "inf": true, "nan": true,
}

// promQLAggregations are PromQL's aggregation operators, which may be followed by their
// grouping (sum by (l) (...)) rather than "(".
var promQLAggregations = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true, "count": true,
	"count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true,
}

// promQLRefs returns the metric names and label names a PromQL expression refers to. It is
// a tokenizer, not a parser, enough for dashboard queries: string literals are skipped,
// identifiers inside {...} before a matcher operator are labels, identifiers in the
// parentheses after by/without/on/ignoring are labels, identifiers followed by "(" are
// functions, durations inside [...] are skipped, Grafana variables ($name, ${name}) are
// skipped. Grafana's label_values(label) and label_values(metric, label) are understood.
func promQLRefs(expr string) (metricNames, labels []string, err error) {
	var toks []string // identifiers and single punctuation characters, strings dropped
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(expr) && expr[j] != c {
				if expr[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(expr) {
				return nil, nil, fmt.Errorf("unterminated string at %d", i)
			}
			toks = append(toks, `"`)
			i = j + 1
		case c == '$':
			j := i + 1
			if j < len(expr) && expr[j] == '{' {
				for j < len(expr) && expr[j] != '}' {
					j++
				}
				j++
			} else {
				for j < len(expr) && isIdent(expr[j]) {
					j++
				}
			}
			toks = append(toks, "$")
			i = j
		case isIdentStart(c):
			j := i
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			toks = append(toks, expr[i:j])
			i = j
		case c == '[':
			j := strings.IndexByte(expr[i:], ']')
			if j < 0 {
				return nil, nil, fmt.Errorf("unterminated range at %d", i)
			}
			i += j + 1
		case c >= '0' && c <= '9' || c == '.':
			j := i
			for j < len(expr) && (isIdent(expr[j]) || expr[j] == '.' || expr[j] == '+' && (expr[j-1] == 'e' || expr[j-1] == 'E')) {
				j++
			}
			i = j // a number (1e9, 0.5)
		case c == ' ' || c == '\t' || c == '\n':
			i++
		default:
			toks = append(toks, string(c))
			i++
		}
	}
	brace, labelList := 0, 0
	for k, t := range toks {
		next := ""
		if k+1 < len(toks) {
			next = toks[k+1]
		}
		switch {
		case t == "{":
			brace++
		case t == "}":
			brace--
		case t == "(" && labelList > 0:
			labelList++
		case t == ")" && labelList > 0:
			labelList--
			if labelList == 1 {
				labelList = 0
			}
		case !isIdentStart(t[0]):
		case brace > 0:
			if next == "=" || next == "!" || next == "~" {
				labels = append(labels, t)
			}
		case labelList > 1:
			labels = append(labels, t)
		case t == "by" || t == "without" || t == "on" || t == "ignoring" || t == "group_left" || t == "group_right":
			if next == "(" {
				labelList = 1
			}
		case t == "label_values" && next == "(":
			// label_values(label) or label_values(metric-selector, label): the last
			// identifier before ")" at this depth is a label.
			depth, last := 0, -1
			for j := k + 1; j < len(toks); j++ {
				if toks[j] == "(" {
					depth++
				} else if toks[j] == ")" {
					depth--
					if depth == 0 {
						break
					}
				} else if depth == 1 && isIdentStart(toks[j][0]) {
					last = j
				}
			}
			if last < 0 {
				return nil, nil, fmt.Errorf("label_values without a label")
			}
			labels = append(labels, toks[last])
			toks[last] = "$" // not a metric
		case next == "(" || promQLAggregations[t] && (next == "by" || next == "without"):
			// a function, or an aggregation (its grouping may come before its argument)
		case promQLWords[strings.ToLower(t)]:
		default:
			metricNames = append(metricNames, t)
		}
	}
	if brace != 0 {
		return nil, nil, fmt.Errorf("unbalanced braces")
	}
	return metricNames, labels, nil
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdent(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// TestPromQLRefs checks the tokenizer on the shapes the dashboard uses and on ones it
// might grow to use.
func TestPromQLRefs(t *testing.T) {
	for _, c := range []struct {
		expr            string
		metrics, labels []string
	}{
		{`sum by (daqiri_interface_name) (rate(daqiri_rx_bytes_total{daqiri_interface_name=~"$interface"}[$__rate_interval])) * 8`,
			[]string{"daqiri_rx_bytes_total"}, []string{"daqiri_interface_name", "daqiri_interface_name"}},
		{`sum(increase(x_total{a="b}",c!~'d'}[5m])) or vector(0)`, []string{"x_total"}, []string{"a", "c"}},
		{`a / on(l1, l2) group_left(l3) b offset 5m > bool 1e9`, []string{"a", "b"}, []string{"l1", "l2", "l3"}},
		{`label_values(daqiri_interface_name)`, nil, []string{"daqiri_interface_name"}},
		{`label_values(m_total{q="1"}, lab)`, []string{"m_total"}, []string{"lab", "q"}},
		{`histogram_quantile(0.99, sum without (le) (rate(h_bucket[${__range}])))`, []string{"h_bucket"}, []string{"le"}},
	} {
		m, l, err := promQLRefs(c.expr)
		if err != nil || !slices.Equal(m, c.metrics) || !slices.Equal(l, c.labels) {
			t.Errorf("%s:\nmetrics %q labels %q err %v\nwant %q %q", c.expr, m, l, err, c.metrics, c.labels)
		}
	}
	for _, bad := range []string{`a{b="c}`, `rate(a[5m)`, `a{b="c"`} {
		if _, _, err := promQLRefs(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// dashboardQueries returns every PromQL query in a Grafana dashboard: panel targets' expr and
// query variables' queries, each with where it is.
func dashboardQueries(t testing.TB, data []byte) map[string]string {
	t.Helper()
	var d struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr  string `json:"expr"`
				RefID string `json:"refId"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
		return nil
	}
	qs := map[string]string{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			if tg.Expr == "" {
				t.Errorf("panel %q target %s has no expr", p.Title, tg.RefID)
			}
			qs[fmt.Sprintf("panel %q target %s", p.Title, tg.RefID)] = tg.Expr
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			var s string
			if json.Unmarshal(v.Query, &s) != nil {
				t.Errorf("variable %s: query %s is neither an object nor a string", v.Name, v.Query)
			}
			q.Query = s
		}
		qs[fmt.Sprintf("variable %s", v.Name)] = q.Query
	}
	return qs
}

// servedNames scrapes a real exporter over HTTP, with a receive queue, a transmit queue and
// drops registered, and returns the metric families and label names it serves.
func servedNames(t *testing.T) (names, labels map[string]bool) {
	t.Helper()
	p, err := NewPrometheus()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	src := func() []metrics.Sample {
		return []metrics.Sample{
			{Engine: "socket", Interface: "server", Port: 0, Queue: "0", Dir: metrics.Rx, Packets: 10, Bytes: 1000, Drops: map[string]uint64{"rx_ring_full": 1}},
			{Engine: "socket", Interface: "client", Port: 1, Queue: "0", Dir: metrics.Tx, Packets: 10, Bytes: 1000},
		}
	}
	reg, err := metrics.Register(p.Provider.Meter(metrics.MeterName), src)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	srv, err := Serve("127.0.0.1:0", p.Handler())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	c := &http.Client{Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Get(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("scrape: %v\n%s", err, body)
	}
	names, labels = map[string]bool{}, map[string]bool{}
	for name, f := range fams {
		names[name] = true
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = true
			}
		}
	}
	return names, labels
}

// TestGrafanaDashboard: every metric and label the dashboard's PromQL names is one the
// exporter serves, and every daqiri metric it serves is on the dashboard.
func TestGrafanaDashboard(t *testing.T) {
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	served, servedLabels := servedNames(t)
	checkDashboard(t, data, served, servedLabels)

	// The check catches a misspelt metric, a label the exporter does not have, and a
	// dashboard that lost a metric.
	for _, c := range []struct{ from, to, want string }{
		{"daqiri_rx_bytes_total", "daqiri_rx_byte_total", `metric "daqiri_rx_byte_total"`},
		{"daqiri_drop_reason", "daqiri_dropreason", `label "daqiri_dropreason"`},
		{"daqiri_tx_packets_total", "daqiri_tx_bytes_total", "daqiri_tx_packets_total is served but on no panel"},
	} {
		ft := &fakeT{}
		checkDashboard(ft, []byte(strings.ReplaceAll(string(data), c.from, c.to)), served, servedLabels)
		if !strings.Contains(ft.msg, c.want) {
			t.Errorf("dashboard with %s → %s: check said %q, want it to name %s", c.from, c.to, ft.msg, c.want)
		}
	}
}

// fakeT collects what checkDashboard reports, for the negative cases.
type fakeT struct {
	testing.TB
	msg string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Errorf(format string, args ...any) {
	f.msg += fmt.Sprintf(format, args...) + "\n"
}
func (f *fakeT) Fatalf(format string, args ...any) { f.Errorf(format, args...) }

// checkDashboard reports every query that names a metric or label the exporter does not
// serve, and every daqiri metric served that no query uses.
func checkDashboard(t testing.TB, data []byte, served, servedLabels map[string]bool) {
	t.Helper()
	qs := dashboardQueries(t, data)
	if len(qs) == 0 {
		t.Errorf("%s: no queries", dashboardFile)
		return
	}
	used := map[string]bool{}
	where := make([]string, 0, len(qs))
	for w := range qs {
		where = append(where, w)
	}
	sort.Strings(where)
	for _, w := range where {
		ms, ls, err := promQLRefs(qs[w])
		if err != nil {
			t.Errorf("%s: %q: %v", w, qs[w], err)
			continue
		}
		for _, m := range ms {
			used[m] = true
			if !served[m] {
				t.Errorf("%s: metric %q is not served by the exporter (it serves %v): %s", w, m, sortedKeys(served), qs[w])
			}
		}
		for _, l := range ls {
			if !servedLabels[l] {
				t.Errorf("%s: label %q is not on any series the exporter serves (labels %v): %s", w, l, sortedKeys(servedLabels), qs[w])
			}
		}
	}
	for m := range served {
		if strings.HasPrefix(m, "daqiri_") && !used[m] {
			t.Errorf("%s is served but on no panel of %s", m, dashboardFile)
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
