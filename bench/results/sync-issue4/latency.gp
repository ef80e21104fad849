set terminal svg size 900,540 dynamic font 'sans,11'
set output 'latency.svg'
set title 'SCHED_FIFO latencies (seed 002): avg cycles, bars min..max (each the median over runs)' noenhanced
set ylabel 'TSC cycles (log scale)'
set logscale y
set style data histogram
set style histogram errorbars gap 2 lw 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set key top left noenhanced
set datafile missing 'NaN'
plot 'latency.dat' using 2:3:4:xtic(1) title 'glibc NPTL', 'latency.dat' using 5:6:7 title 'weft', 'latency.dat' using 8:9:10 title 'musl (static)'
