package secperf.jmh;

import java.io.File;
import java.nio.file.Files;
import java.security.Provider;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.bouncycastle.jce.provider.BouncyCastleProvider;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

/**
 * secperf-jmh: `java -jar secperf-jmh.jar speed --provider jce|bouncycastle --alg A --op O ...`
 * speaks the probe's speed protocol (JSON lines meta, row, sample..., end; unsupported/error).
 * Samples are JMH measurement iterations in a forked JVM (forks, warm-up iterations and
 * iteration time are options; each sample says which fork made it); the end line carries JMH's
 * own score and error. The reference for benchmarks/libraries.py is a separate JMH benchmark
 * (Reference) run through JMH's own command line, not through this class.
 */
public final class Main {
    static Provider provider(String name) {
        return name.equals("bouncycastle") ? new BouncyCastleProvider() : null;
    }

    static String bcVersion() {
        String info = new BouncyCastleProvider().getInfo();   // "BouncyCastle Security Provider v1.80"
        int v = info.lastIndexOf(" v");
        return v >= 0 ? info.substring(v + 2) : info;
    }

    static String library(String name) {
        String jdk = "OpenJDK " + System.getProperty("java.version");
        if (name.equals("bouncycastle")) return "Bouncy Castle " + bcVersion() + " on " + jdk;
        return "Java JCE (" + jdk + ": SunEC, SunRsaSign, SunJCE)";
    }

    static String version(String name) {
        return name.equals("bouncycastle") ? bcVersion() : System.getProperty("java.version");
    }

    static String q(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static void line(String body) {
        System.out.println("{" + body + "}");
        System.out.flush();
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = new LinkedHashMap<>();
        a.put("provider", "jce"); a.put("size", "32"); a.put("n", "30"); a.put("warmup", "2");
        a.put("min-sample-us", "1000"); a.put("max-seconds", "10"); a.put("hash", "sha256"); a.put("seed", "1");
        a.put("forks", "1"); a.put("iteration-ms", "100"); a.put("warmup-ms", "2000");
        boolean prehashed = false;
        if (argv.length >= 1 && argv[0].equals("--version")) {
            String p = argv.length >= 3 && argv[1].equals("--provider") ? argv[2] : "jce";
            line("\"type\":\"version\",\"tool\":\"secperf-jmh\",\"library\":" + q(library(p)) + ",\"version\":" + q(version(p)));
            return;
        }
        if (argv.length < 1 || !argv[0].equals("speed")) {
            System.err.println("usage: secperf-jmh speed --provider jce|bouncycastle --alg A --op O [--size N] [--n N] [--warmup N] "
                    + "[--min-sample-us US] [--max-seconds S] [--hash sha256|sha1] [--prehashed] [--seed N] [--forks N] "
                    + "[--iteration-ms MS] [--warmup-ms MS] [--lock-wait-s S]");
            System.exit(2);
        }
        for (int i = 1; i < argv.length; i++) {
            String k = argv[i];
            if (k.equals("--prehashed")) { prehashed = true; continue; }
            if (!k.startsWith("--") || i + 1 >= argv.length) { System.err.println("bad option " + k); System.exit(2); }
            a.put(k.substring(2), argv[++i]);
        }
        String prov = a.get("provider");
        if (!prov.equals("jce") && !prov.equals("bouncycastle")) { System.err.println("--provider jce|bouncycastle"); System.exit(2); }
        String alg = a.get("alg"), op = a.get("op");
        int size = Integer.parseInt(a.get("size"));
        line("\"type\":\"meta\",\"tool\":\"secperf-jmh\",\"library\":" + q(library(prov)) + ",\"version\":" + q(version(prov))
                + ",\"timer_overhead_ns\":null,\"clock\":\"System.nanoTime (wall), ThreadMXBean.getCurrentThreadCpuTime (CPU)\"");
        Ops.Prepared prep;
        try {
            prep = Ops.prepare(alg, op, size, a.get("hash"), prehashed, Long.parseLong(a.get("seed")), provider(prov), library(prov));
        } catch (Ops.Unsupported u) {
            line("\"type\":\"unsupported\",\"reason\":" + q(u.getMessage()));
            return;
        }
        // One JMH iteration is one sample: at least --min-sample-us, default 100 ms (JMH's own
        // iteration bookkeeping is then far below 1%). Warm-up: at least --warmup-ms for the JIT.
        long itMs = Math.max(Long.parseLong(a.get("iteration-ms")), (long) Math.ceil(Double.parseDouble(a.get("min-sample-us")) / 1000));
        // --n and --max-seconds are for the whole row: each of the forks takes its share of both.
        int forks = Math.max(1, Integer.parseInt(a.get("forks")));
        int n = (int) Math.ceil(Integer.parseInt(a.get("n")) / (double) forks);
        double maxS = Double.parseDouble(a.get("max-seconds")) / forks;
        int nBudget = (int) Math.max(1, Math.floor(maxS * 1000 / itMs));
        String stopped = n > nBudget ? "time" : "n";
        n = Math.min(n, nBudget);
        int warm = (int) Math.max(Integer.parseInt(a.get("warmup")), Math.ceil(Double.parseDouble(a.get("warmup-ms")) / itMs));
        File samples = File.createTempFile("secperf-jmh", ".jsonl");
        samples.deleteOnExit();
        String bench = Bench.class.getName();
        ChainedOptionsBuilder ob = new OptionsBuilder()
                .include("^" + bench.replace(".", "\\.") + "\\.")
                .forks(forks).warmupIterations(warm).measurementIterations(n)
                .warmupTime(TimeValue.milliseconds(itMs)).measurementTime(TimeValue.milliseconds(itMs))
                .timeUnit(TimeUnit.MICROSECONDS).threads(1).shouldFailOnError(true)
                .verbosity(VerboseMode.SILENT)
                .param("alg", alg).param("op", op).param("size", String.valueOf(size)).param("hash", a.get("hash"))
                .param("prehashed", String.valueOf(prehashed)).param("seed", a.get("seed")).param("provider", prov)
                .param("out", samples.getAbsolutePath());
        line("\"type\":\"row\",\"alg\":" + q(alg) + ",\"op\":" + q(op) + ",\"size_bytes\":" + size
                + ",\"hash\":" + ((op.equals("sign") || op.equals("verify")) && !alg.startsWith("ed") ? q(a.get("hash")) : "null")
                + ",\"prehashed\":" + prehashed + ",\"batch\":null,\"key_bits\":" + prep.keyBits + ",\"detail\":" + q(prep.detail)
                + ",\"key_source\":\"generated in the forked JVM before timing\""
                + ",\"jmh\":{\"forks\":" + forks + ",\"warmup_iterations\":" + warm + ",\"measurement_iterations\":" + n
                + ",\"iteration_ms\":" + itMs + ",\"mode\":\"avgt\",\"benchmark\":" + q(bench) + "}");
        long t0 = System.nanoTime();
        // JMH allows one run per machine at a time (its lock file), so that two benchmarks do not
        // disturb each other: wait for the other run (up to --lock-wait-s), then fail the row.
        Collection<RunResult> res = null;
        long lockDeadline = System.nanoTime() + (long) (Double.parseDouble(a.getOrDefault("lock-wait-s", "300")) * 1e9);
        while (res == null) {
            try {
                res = new Runner(ob.build()).run();
            } catch (Exception e) {
                String why = String.valueOf(e.getMessage());
                if (why.contains("JMH lock") && System.nanoTime() < lockDeadline) {
                    Thread.sleep(1000);
                    continue;
                }
                line("\"type\":\"error\",\"reason\":" + q("JMH run failed: " + why));
                System.exit(1);
                return;
            }
        }
        // Bench writes each sample with its JVM's pid; forks run one after another, so the order
        // in which pids first appear numbers the forks 0, 1, ...
        int count = 0;
        Map<String, Integer> forkOf = new LinkedHashMap<>();
        Pattern pid = Pattern.compile("\"pid\":(\\d+)");
        for (String l : new ArrayList<>(Files.readAllLines(samples.toPath()))) {
            if (l.isBlank()) continue;
            Matcher m = pid.matcher(l);
            if (m.find()) {
                int fork = forkOf.computeIfAbsent(m.group(1), k -> forkOf.size());
                l = l.substring(0, m.start()) + "\"fork\":" + fork + l.substring(m.end());
            }
            System.out.println(l);
            count++;
        }
        System.out.flush();
        double score = Double.NaN, error = Double.NaN;
        for (RunResult r : res) {
            score = r.getPrimaryResult().getScore();
            error = r.getPrimaryResult().getScoreError();
        }
        line("\"type\":\"end\",\"samples\":" + count + ",\"stopped\":\"" + stopped + "\",\"elapsed_s\":" + (System.nanoTime() - t0) / 1e9
                + ",\"jmh_score_us\":" + (Double.isNaN(score) ? "null" : score) + ",\"jmh_error_us\":" + (Double.isNaN(error) ? "null" : error));
    }
}
