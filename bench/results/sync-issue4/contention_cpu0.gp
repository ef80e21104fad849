set terminal svg size 900,540 dynamic font 'sans,11'
set output 'contention_cpu0.svg'
set title 'Lock contention, Figure 3 of seed 000, cpu0: median, bars min..max' noenhanced
set xlabel 'critical regions K (32 threads)'
set ylabel 'seconds (lower is better)'
set logscale x 2
set xrange [0.714286:44.8]
set xtics (1, 32)
set grid
set yrange [0:*]
set key top left noenhanced
set datafile missing 'NaN'
plot 'contention_cpu0.dat' using 1:2:3:4 with yerrorlines lw 2 title 'glibc NPTL', 'contention_cpu0.dat' using 1:5:6:7 with yerrorlines lw 2 title 'weft', 'contention_cpu0.dat' using 1:8:9:10 with yerrorlines lw 2 title 'musl (static)'
