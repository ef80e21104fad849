set terminal svg size 900,540 dynamic font 'sans,11'
set output 'speedup_cpu0.svg'
set title 'Speed-up over glibc, cpu0 (>1: faster than glibc; median of runs)' noenhanced
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set yrange [0:*]
set xtics rotate by -40 noenhanced font ',9'
set key top right noenhanced
set datafile missing 'NaN'
plot 'speedup_cpu0.dat' using 2:xtic(1) title 'weft', 'speedup_cpu0.dat' using 3 title 'musl (static)', 1 with lines dt 2 lc rgb 'black' notitle
