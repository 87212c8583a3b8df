set terminal svg size 960,540 dynamic noenhanced font 'sans,11' background '#ffffff'
set output '/work/main/metrics/2026-11-29T23-42-49Z/sweep.svg'
set title 'sweep: req/s vs HOOKD_THREADS (lines: store, HOOKD_DB_POOL, connections)'
set grid ytics
set key top left
set xlabel 'HOOKD_THREADS'
set ylabel 'req/s'
set yrange [0:*]
set xtics 1
set key outside right noenhanced
plot '/work/main/metrics/2026-11-29T23-42-49Z/sweep.dat' index 0 using 1:2 with linespoints title "postgres pool=1 c=100", '/work/main/metrics/2026-11-29T23-42-49Z/sweep.dat' index 1 using 1:2 with linespoints title "postgres pool=1 c=500", '/work/main/metrics/2026-11-29T23-42-49Z/sweep.dat' index 2 using 1:2 with linespoints title "postgres pool=2 c=100", '/work/main/metrics/2026-11-29T23-42-49Z/sweep.dat' index 3 using 1:2 with linespoints title "postgres pool=2 c=500", '/work/main/metrics/2026-11-29T23-42-49Z/sweep.dat' index 4 using 1:2 with linespoints title "postgres pool=4 c=100", '/work/main/metrics/2026-11-29T23-42-49Z/sweep.dat' index 5 using 1:2 with linespoints title "postgres pool=4 c=500", '/work/main/metrics/2026-11-29T23-42-49Z/sweep.dat' index 6 using 1:2 with linespoints title "postgres pool=8 c=100", '/work/main/metrics/2026-11-29T23-42-49Z/sweep.dat' index 7 using 1:2 with linespoints title "postgres pool=8 c=500", '/work/main/metrics/2026-11-29T23-42-49Z/sweep.dat' index 8 using 1:2 with linespoints title "sqlite pool=- c=100", '/work/main/metrics/2026-11-29T23-42-49Z/sweep.dat' index 9 using 1:2 with linespoints title "sqlite pool=- c=500"
