# benchtable.awk turns `go test -bench` output of the mlx5 engine and burst path benchmarks
# (make bench-mlx5, make bench-burst) into a Markdown table: per benchmark the median and range
# of ns/packet over its runs, the median over the runs that kept the GPU host's fast speed
# (ctl-ratio below 0.85 at both ends; their count, of all runs), the median Mpps and
# allocations per packet, next to the goals of issue 31, the figures before it (H200 host,
# main at 38f58a0) and the published anchors.
# POSIX awk (no asort): runs where the benchmarks run, Go or not.
#
#   go test -run '^$' -bench ... | tee out.txt | awk -f mk/benchtable.awk

function median(s,    n, a, i, j, t) {
	n = split(s, a, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	lo = a[1]; hi = a[n]
	return (n % 2) ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}

function note(name) {
	if (name ~ /^BenchmarkRX\/size=64\/queues=1\/compression=true$/) return "≤ 10 | 43.6–57.8 (model in the loop) | Go over mlx5dv, CX-6 Dx: 22.7 ns (44.1 Mpps); DPDK mlx5 PMD: 21.7 ns (46.1 Mpps)"
	if (name ~ /^BenchmarkRX\//) return "— | 43.6–57.8 (all RX cases) | as above"
	if (name ~ /^BenchmarkRXModel\//) return "— | — | upstream DAQIRI over DPDK, DGX Spark, end to end: 50.8 ns (19.7 Mpps)"
	if (name ~ /^BenchmarkTX\/size=64$/) return "≤ 15 | 189–245 (model in the loop) | Go over mlx5dv: 14.8 ns (67.6 Mpps)"
	if (name ~ /^BenchmarkTX\/size=1500$/) return "— | 738–800 (model in the loop) | —"
	if (name ~ /^BenchmarkTXModelFed\/size=64$/) return "(≤ 15: BenchmarkTX's form until 2026-11-29) | as TX | as TX"
	if (name ~ /BurstPath\/lengths(-all)?\/batch64$/) return "≤ 10 | 11.9–19.3 | —"
	if (name ~ /BurstPath\/(headers|template|template-all)\/batch64$/) return "≤ 15 | 32.7–35.6 (headers) | —"
	return "— | — | —"
}

/^Benchmark/ {
	name = $1
	sub(/-[0-9]+$/, "", name)
	if (!(name in seen)) { seen[name] = 1; order[++count] = name }
	c = ""
	for (i = 3; i < NF; i++)
		if ($(i+1) == "ctl-ratio") c = $i
	for (i = 3; i < NF; i++) {
		if ($(i+1) == "ns/pkt") {
			ns[name] = ns[name] " " $i; runs[name]++
			if (c != "") ctl[name] = 1
			if (c != "" && c + 0 < 0.85) { fast[name] = fast[name] " " $i; nfast[name]++ }
		}
		if ($(i+1) == "Mpps") mpps[name] = mpps[name] " " $i
		if ($(i+1) == "allocs/pkt") allocs[name] = allocs[name] " " $i
		if ($(i+1) == "allocs/op" && !(name in allocs)) allocsop[name] = allocsop[name] " " $i
	}
}

END {
	print "| benchmark | ns/packet (median) | range | fast speed: median (runs) | Mpps (median) | allocs/packet | goal (ns) | before (ns) | anchors |"
	print "|---|---:|---:|---:|---:|---:|---|---|---|"
	for (k = 1; k <= count; k++) {
		name = order[k]
		if (!(name in ns)) continue
		m = median(ns[name]); r = sprintf("%.1f–%.1f", lo, hi)
		f = "—" # no ctl-ratio reported
		if (name in fast) f = sprintf("%.1f (%d of %d)", median(fast[name]), nfast[name], runs[name])
		else if (name in ctl) f = sprintf("— (0 of %d)", runs[name])
		p = (name in mpps) ? sprintf("%.1f", median(mpps[name])) : "—"
		a = "—"
		if (name in allocs) a = sprintf("%.2g", median(allocs[name]))
		else if (name in allocsop) { a = median(allocsop[name]); if (a != 0) a = a " per burst" }
		short = name; sub(/^Benchmark/, "", short)
		printf "| %s | %.1f | %s | %s | %s | %s | %s |\n", short, m, r, f, p, a, note(name)
	}
}
