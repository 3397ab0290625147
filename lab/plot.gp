# Per-host load over time for each scheduler, from lab/lab.py's output.
#   gnuplot -e "dir='target/demo'" lab/plot.gp      -> dir/hosts.png
# Top row: active connections / host weight per physical host (what the
# host-aware schedulers balance); bottom row: the fraction of each second the
# host was busy (from the lab's processor-sharing servers, 5-s moving average). The grey band is
# the measured window.
if (!exists("dir")) dir = "target/demo"
load dir."/labels.gp"
set terminal pngcairo size 1500,820 font "DejaVu Sans,10"
set output dir."/hosts.png"
n = words(scheds)
f(s) = sprintf("%s/samples-%s.dat", dir, s)
lmax = 0
do for [i=1:n] {
    do for [c=2:6] {
        stats f(word(scheds, i)) using c nooutput
        if (STATS_max > lmax) { lmax = STATS_max }
    }
}
lmax = lmax * 1.15 + 0.1
set multiplot layout 2, n title "vmwlch lab: 5 hosts (h1,h2 fast, weight 3; h3-h5 weight 2), 20 VMs, sensor + web traffic" font ",12"
set key top left horizontal reverse Left font ",9" samplen 2
set grid
hosts = "h1 h2 h3 h4 h5"
colors = "#1f77b4 #2ca02c #d62728 #ff7f0e #9467bd"
do for [i=1:n] {
    s = word(scheds, i)
    set title value("title_".s)
    set xlabel "time (s)"
    set ylabel "active conns / host weight"
    set yrange [0:lmax]
    plot f(s) using 1:($12 * lmax) with fillsteps fs solid 1.0 noborder fc rgb "#e8e8e8" notitle, \
         for [h=1:5] f(s) using 1:(column(h + 1)) with lines lw 2 lc rgb word(colors, h) title word(hosts, h)
}
do for [i=1:n] {
    s = word(scheds, i)
    set title s.": host busy time (5-s average)"
    set ylabel "busy %"
    set yrange [0:115]
    plot f(s) using 1:($12 * 115) with fillsteps fs solid 1.0 noborder fc rgb "#e8e8e8" notitle, \
         for [h=1:5] f(s) using 1:(column(h + 6)) with lines lw 1.5 lc rgb word(colors, h) title word(hosts, h)
}
unset multiplot
