set terminal svg size 900,540 dynamic font 'sans,11'
set output 'creation_fig1_cpu0.svg'
set title 'Figure 1 of seed 000, cpu0: seconds for 100000 creations, minimum over C' noenhanced
set xlabel 'creators T'
set ylabel 'seconds'
set grid
set xtics (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20)
set yrange [0:*]
set key top right noenhanced
set datafile missing 'NaN'
plot 'creation_fig1_cpu0.dat' using 1:2 with linespoints lw 2 pt 7 title 'glibc NPTL', 'creation_fig1_cpu0.dat' using 1:3 with linespoints lw 2 pt 7 title 'weft'
