package secperf.jmh;

import java.io.FileWriter;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.runner.IterationType;

/**
 * secperf's JMH benchmark: one operation per call. Each measurement iteration is one secperf
 * sample — wall (System.nanoTime) and the benchmark thread's CPU time (ThreadMXBean) read in the
 * iteration's set-up and tear-down on the benchmark thread, and the number of calls — written as
 * a JSON line to the file named by `out`, with the forked JVM's pid (Main turns it into the fork's
 * number). Warm-up iterations are not written.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class Bench {
    @Param({"ecdsa-p256"}) public String alg;
    @Param({"sign"}) public String op;
    @Param({"32"}) public int size;
    @Param({"sha256"}) public String hash;
    @Param({"false"}) public boolean prehashed;
    @Param({"1"}) public long seed;
    @Param({"jce"}) public String provider;
    @Param({""}) public String out;

    private Ops.Op fn;
    private long calls, w0, c0;
    private final ThreadMXBean mx = ManagementFactory.getThreadMXBean();

    @Setup(Level.Trial)
    public void prepare() throws Exception {
        fn = Ops.prepare(alg, op, size, hash, prehashed, seed, Main.provider(provider), Main.library(provider)).op;
    }

    @Setup(Level.Iteration)
    public void start() {
        calls = 0;
        c0 = mx.getCurrentThreadCpuTime();
        w0 = System.nanoTime();
    }

    @TearDown(Level.Iteration)
    public void stop(IterationParams it) throws IOException {
        long w1 = System.nanoTime(), c1 = mx.getCurrentThreadCpuTime();
        if (it.getType() != IterationType.MEASUREMENT || out.isEmpty()) return;
        try (FileWriter f = new FileWriter(out, true)) {
            f.write("{\"type\":\"sample\",\"wall_ns\":" + (w1 - w0) + ",\"cpu_ns\":" + (c1 - c0) + ",\"ops\":" + calls
                    + ",\"pid\":" + ProcessHandle.current().pid() + "}\n");
        }
    }

    @Benchmark
    public Object call() throws Exception {
        calls++;
        return fn.call();
    }
}
