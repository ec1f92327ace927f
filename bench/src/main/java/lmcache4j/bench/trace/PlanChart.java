package lmcache4j.bench.trace;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The plan as an SVG chart a person reads at a glance: hit rate against cache capacity (log scale,
 * in GB of the model's KV and in % of the trace's distinct blocks), LRU's one-pass curve, each
 * policy's and Belady's samples joined by lines, the infinite cache and the 50/80/90 % targets as
 * dashed lines. Plain SVG 1.1 with no scripts or external references: any browser or
 * {@code rsvg-convert} renders it.
 */
public final class PlanChart {
    static final int WIDTH = 960;
    static final int HEIGHT = 600;
    private static final int LEFT = 80;
    private static final int RIGHT = 130;
    private static final int TOP = 60;
    private static final int BOTTOM = 90;
    /** Line colours of the policies, in order (a colour-blind-safe palette); LRU and Belady have their own. */
    private static final String[] COLOURS = {"#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#f0e442", "#999999"};
    private static final String LRU_COLOUR = "#0072b2";
    private static final String BELADY_COLOUR = "#000000";
    /** Points of LRU's curve drawn. */
    private static final int CURVE_POINTS = 240;

    private PlanChart() {
    }

    /** The chart of {@code plan} as an SVG document. */
    public static String svg(CapacityPlan.Plan plan) {
        Trace trace = plan.settings().trace();
        double minBlocks = Math.max(1, plan.samples().getFirst().blocks() / 2.0);
        double maxBlocks = Math.max(minBlocks * 2, plan.distinctBlocks());
        double headroom = plan.rate(plan.infinite()) * 100 * 1.15;
        double yStep = niceStep(headroom / 8);
        double topRate = Math.ceil(headroom / yStep) * yStep / 100;
        Axes ax = new Axes(minBlocks, maxBlocks, Math.max(topRate, 0.05));
        StringBuilder s = new StringBuilder();
        s.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                + "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"13\">%n",
                WIDTH, HEIGHT, WIDTH, HEIGHT));
        s.append(String.format(Locale.ROOT, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>%n", WIDTH, HEIGHT));
        s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"28\" font-size=\"17\" font-weight=\"bold\">%s</text>%n",
                LEFT, escape("Prefix-cache hit rate vs capacity")));
        s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"48\" fill=\"#444\">%s</text>%n", LEFT,
                escape(shorten(trace.source(), 60) + String.format(Locale.ROOT, ": %,d requests, %,d distinct blocks of %d tokens",
                        trace.requests().size(), plan.distinctBlocks(), trace.blockTokens()))));
        grid(s, ax, plan);
        // targets and the infinite cache
        for (CapacityPlan.Target t : plan.targets()) {
            double y = ax.y(plan.rate(t.hits()));
            s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#bbb\" "
                    + "stroke-dasharray=\"2,4\"/>%n", LEFT, y, ax.right(), y));
            s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#777\" font-size=\"11\">%.0f%% of infinite</text>%n",
                    ax.right() + 6, y + 4, 100 * t.fraction()));
        }
        double yInf = ax.y(plan.rate(plan.infinite()));
        s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" "
                + "stroke-width=\"1.5\" stroke-dasharray=\"8,4\"/>%n", LEFT, yInf, ax.right(), yInf));
        s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#333\" font-size=\"11\">infinite %.1f%%</text>%n",
                ax.right() + 6, yInf + 4, 100 * plan.rate(plan.infinite())));
        // LRU's curve
        List<double[]> lru = new ArrayList<>();
        for (int i = 0; i <= CURVE_POINTS; i++) {
            double blocks = Math.exp(Math.log(minBlocks) + i * (Math.log(maxBlocks) - Math.log(minBlocks)) / CURVE_POINTS);
            lru.add(new double[]{ax.x(blocks), ax.y(plan.rate(plan.lru().hits((long) blocks)))});
        }
        polyline(s, lru, LRU_COLOUR, 2.5, null);
        // Belady and the policies at the samples
        List<double[]> belady = new ArrayList<>();
        for (CapacityPlan.Sample p : plan.samples()) {
            belady.add(new double[]{ax.x(p.blocks()), ax.y(plan.rate(p.belady()))});
        }
        polyline(s, belady, BELADY_COLOUR, 1.8, "6,3");
        markers(s, belady, BELADY_COLOUR);
        List<String> names = plan.settings().policies();
        for (int i = 0; i < names.size(); i++) {
            List<double[]> pts = new ArrayList<>();
            for (CapacityPlan.Sample p : plan.samples()) {
                pts.add(new double[]{ax.x(p.blocks()), ax.y(plan.rate(p.policies().get(i)))});
            }
            polyline(s, pts, COLOURS[i % COLOURS.length], 2, null);
            markers(s, pts, COLOURS[i % COLOURS.length]);
        }
        legend(s, ax, names);
        s.append("</svg>\n");
        return s.toString();
    }

    private static void grid(StringBuilder s, Axes ax, CapacityPlan.Plan plan) {
        s.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333\"/>%n",
                LEFT, TOP, ax.right() - LEFT, ax.bottom() - TOP));
        double step = niceStep(ax.topRate * 100 / 10) / 100;
        for (double rate = 0; rate <= ax.topRate + 1e-9; rate += step) {
            double y = ax.y(rate);
            s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>%n",
                    LEFT, y, ax.right(), y));
            s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s%%</text>%n", LEFT - 8,
                    y + 4, trim(100 * rate)));
        }
        // capacity ticks at 1, 2, 5 x 10^k GB of KV, with the share of the distinct blocks below each
        double gbPerBlock = plan.gigabytes(1);
        double minGb = ax.minBlocks * gbPerBlock;
        double maxGb = ax.maxBlocks * gbPerBlock;
        for (double decade = Math.pow(10, Math.floor(Math.log10(minGb))); decade <= maxGb; decade *= 10) {
            for (double m : new double[]{1, 2, 5}) {
                double gb = decade * m;
                if (gb < minGb || gb > maxGb) {
                    continue;
                }
                double blocks = gb / gbPerBlock;
                double x = ax.x(blocks);
                s.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>%n",
                        x, TOP, x, ax.bottom()));
                s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>%n", x,
                        ax.bottom() + 18, gb(gb)));
                s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#777\" "
                        + "font-size=\"11\">%s</text>%n", x, ax.bottom() + 34, percent(100.0 * blocks / plan.distinctBlocks())));
            }
        }
        s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>%n",
                (LEFT + ax.right()) / 2, ax.bottom() + 58, escape("cache capacity: GB of " + plan.settings().model().name()
                        + " KV (log scale); grey: % of the trace's distinct blocks")));
        s.append(String.format(Locale.ROOT, "<text transform=\"translate(22,%.1f) rotate(-90)\" text-anchor=\"middle\">%s</text>%n",
                (TOP + ax.bottom()) / 2, escape("hit rate (full-block lookups served)")));
    }

    /** 1, 2 or 5 times a power of ten, at least {@code raw}. */
    static double niceStep(double raw) {
        double decade = Math.pow(10, Math.floor(Math.log10(raw)));
        for (double m : new double[]{1, 2, 5, 10}) {
            if (decade * m >= raw) {
                return decade * m;
            }
        }
        return decade * 10;
    }

    private static String trim(double raw) {
        double v = Math.round(raw * 10) / 10.0;
        return v == Math.rint(v) ? String.format(Locale.ROOT, "%.0f", v) : String.format(Locale.ROOT, "%.1f", v);
    }

    private static void legend(StringBuilder s, Axes ax, List<String> names) {
        List<String[]> rows = new ArrayList<>();
        rows.add(new String[]{"LRU (one pass, every capacity)", LRU_COLOUR, ""});
        for (int i = 0; i < names.size(); i++) {
            rows.add(new String[]{names.get(i) + " (replays)", COLOURS[i % COLOURS.length], ""});
        }
        rows.add(new String[]{"Belady's MIN (offline)", BELADY_COLOUR, "6,3"});
        rows.add(new String[]{"infinite cache", "#555", "8,4"});
        // about 7.3 px a character at the chart's font size, plus the sample line and margins
        double w = 60 + 7.3 * rows.stream().mapToInt(r -> r[0].length()).max().orElse(0);
        double h = 14 + 22 * rows.size();
        double x = ax.right() - w - 12;
        double y = ax.bottom() - h - 12;
        s.append(String.format(Locale.ROOT, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"white\" "
                + "stroke=\"#999\"/>%n", x, y, w, h));
        double ly = y + 18;
        for (String[] r : rows) {
            s.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                    + "stroke-width=\"2.5\"%s/>%n", x + 10, ly, x + 38, ly, r[1], r[2].isEmpty() ? "" : " stroke-dasharray=\"" + r[2] + "\""));
            s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\">%s</text>%n", x + 46, ly + 4, escape(r[0])));
            ly += 22;
        }
    }

    private static void polyline(StringBuilder s, List<double[]> pts, String colour, double width, String dash) {
        StringBuilder p = new StringBuilder();
        for (double[] pt : pts) {
            p.append(String.format(Locale.ROOT, "%.1f,%.1f ", pt[0], pt[1]));
        }
        s.append(String.format(Locale.ROOT, "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\"%s/>%n",
                p.toString().strip(), colour, width, dash == null ? "" : " stroke-dasharray=\"" + dash + "\""));
    }

    private static void markers(StringBuilder s, List<double[]> pts, String colour) {
        for (double[] pt : pts) {
            s.append(String.format(Locale.ROOT, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>%n", pt[0], pt[1], colour));
        }
    }

    /** {@code gb} gigabytes as a short label: 0.12 GB, 42 GB, 1.3 TB. */
    public static String gb(double gb) {
        if (gb >= 1000) {
            return String.format(Locale.ROOT, "%.1f TB", gb / 1000);
        }
        return gb >= 10 ? String.format(Locale.ROOT, "%.0f GB", gb) : String.format(Locale.ROOT, "%.2g GB", gb);
    }

    private static String percent(double p) {
        return p >= 1 ? String.format(Locale.ROOT, "%.0f%%", p) : String.format(Locale.ROOT, "%.2g%%", p);
    }

    private static String shorten(String text, int max) {
        return text.length() <= max ? text : "..." + text.substring(text.length() - max + 3);
    }

    static String escape(String text) {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }

    /** Maps blocks (log) and hit rate (linear) to pixels. */
    private record Axes(double minBlocks, double maxBlocks, double topRate) {
        double right() {
            return WIDTH - RIGHT;
        }

        double bottom() {
            return HEIGHT - BOTTOM;
        }

        double x(double blocks) {
            double t = (Math.log(Math.max(blocks, minBlocks)) - Math.log(minBlocks)) / (Math.log(maxBlocks) - Math.log(minBlocks));
            return LEFT + t * (right() - LEFT);
        }

        double y(double rate) {
            return bottom() - rate / topRate * (bottom() - TOP);
        }
    }
}
