set terminal svg size 900,540 dynamic font 'sans,11'
set output 'creation_fig2_cpu0.svg'
set title 'Figure 2 of seed 000, cpu0: seconds for 100000 creations, minimum over T' noenhanced
set xlabel 'children per creator C'
set ylabel 'seconds'
set grid
set xtics (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
set yrange [0:*]
set key top right noenhanced
set datafile missing 'NaN'
plot 'creation_fig2_cpu0.dat' using 1:2 with linespoints lw 2 pt 7 title 'glibc NPTL', 'creation_fig2_cpu0.dat' using 1:3 with linespoints lw 2 pt 7 title 'weft'
