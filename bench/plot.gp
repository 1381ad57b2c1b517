# SPDX-License-Identifier: Apache-2.0
# The benchmark's plot: time per operation (median, with the spread of the
# repetitions) and, when callgrind counted them, instructions per operation,
# each operation beside the baselines and its target.
#
#   gnuplot -e 'datafile="results.csv"; outfile="results.svg"' bench/plot.gp
#
# Columns of the CSV (see bench/bench.c, write_csv): 1 id, 2 label, 3 group,
# 4 swaps, 7 ns_median, 8 ns_min, 11 ns_max, 14 target_ns, 16 instr_per_op.
# The same script draws results.csv (the shared library, targets in ratios
# to (b)) and results-archive.csv (the static library linked into the
# program, targets in ratios to (a)).

if (!exists("datafile") || !exists("outfile")) {
	print "usage: gnuplot -e 'datafile=\"results.csv\"; outfile=\"results.svg\"' plot.gp"
	exit status 2
}

set datafile separator comma
set datafile missing ""

# Rows, and whether the instruction column has numbers.
stats datafile using 0 skip 1 nooutput
rows = STATS_records
stats datafile using (strcol(16) ne "" ? 1 : 0) skip 1 nooutput
have_instr = STATS_sum > 0
# The baselines (a), (b) and (c), drawn as vertical lines.
stats datafile using (strcol(1) eq "ie" ? $7 : NaN) skip 1 nooutput
a_ns = STATS_max
stats datafile using (strcol(1) eq "desc" ? $7 : NaN) skip 1 nooutput
b_ns = STATS_max
stats datafile using (strcol(1) eq "gd" ? $7 : NaN) skip 1 nooutput
c_ns = STATS_max
if (have_instr) {
	stats datafile using (strcol(1) eq "desc" ? $16 : NaN) skip 1 nooutput
	b_ir = STATS_max
}

# SVG, or PNG when outfile ends in .png.
width = have_instr ? 1280 : 860
height = 100 + 30 * rows
if (outfile[strlen(outfile) - 3:] eq ".png") {
	set terminal pngcairo size width, height noenhanced font "sans,10" background "white"
} else {
	set terminal svg size width, height noenhanced font "sans,12" background "white"
}
set output outfile

baseline_color = "#4477aa"
library_color = "#cc6677"
color(g) = g eq "baseline" ? 0x4477aa : 0xcc6677

set yrange [rows - 0.5 : -0.5]
set ytics scale 0 nomirror
set grid xtics mxtics lc rgb "#dddddd"
set border 3
set key outside bottom center horizontal
set style arrow 1 nohead lc rgb "#4477aa" dt 2 lw 1.5
set style arrow 2 nohead lc rgb "#888888" dt 3 lw 1.5
set style arrow 3 nohead lc rgb "#228833" dt 4 lw 1.5

if (have_instr) {
	set multiplot layout 1, 2 margins 0.25, 0.98, 0.16, 0.92 spacing 0.03, 0
}

set title "time per operation, ns (median; bar: min to max of the repetitions)"
set logscale x 2
set xrange [1:*]
set xtics format "%g"
set arrow 1 from b_ns, graph 0 to b_ns, graph 1 as 1 front
set arrow 2 from c_ns, graph 0 to c_ns, graph 1 as 2 front
set arrow 3 from a_ns, graph 0 to a_ns, graph 1 as 3 front
plot datafile skip 1 using 7:0:8:11:(color(strcol(3))):ytic(2) \
		with xerrorbars pt 7 ps 0.9 lc rgb variable notitle, \
	'' skip 1 using 14:0 with points pt 6 ps 1.3 lc rgb "#222222" title "target", \
	NaN with points pt 7 lc rgb baseline_color title "baseline", \
	NaN with points pt 7 lc rgb library_color title "library", \
	NaN with lines dt 4 lw 1.5 lc rgb "#228833" title "(a)", \
	NaN with lines dt 2 lw 1.5 lc rgb baseline_color title "(b)", \
	NaN with lines dt 3 lw 1.5 lc rgb "#888888" title "(c)"

if (have_instr) {
	unset arrow
	unset key
	set title "instructions per operation (callgrind)"
	set ytics format ""
	set arrow 1 from b_ir, graph 0 to b_ir, graph 1 as 1 front
	plot datafile skip 1 using 16:0:(color(strcol(3))):ytic("") \
		with points pt 7 ps 0.9 lc rgb variable notitle
	unset multiplot
}
