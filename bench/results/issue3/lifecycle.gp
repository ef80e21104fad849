set terminal pngcairo size 900,540 font ',10'
set output 'lifecycle.png'
set title 'Thread life cycle: create + reap a do-nothing thread (median, min..max)'
set ylabel 'cycles per second'
set style data histogram
set style histogram errorbars gap 2 lw 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set yrange [0:*]
set format y '%.0s%c'
set key top left
set xtics rotate by -20 noenhanced
set datafile missing 'NaN'
plot 'lifecycle.dat' using 2:3:4:xtic(1) title 'glibc NPTL', 'lifecycle.dat' using 5:6:7 title 'weft', 'lifecycle.dat' using 8:9:10 title 'musl (static)'
