package secperf.jmh;

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

/** The same operation as a plain JMH benchmark (no per-iteration clocks, no call counter): the
 *  reference benchmarks/libraries.py compares secperf's JVM rows against. */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class Plain {
    @Param({"ecdsa-p256"}) public String alg;
    @Param({"sign"}) public String op;
    @Param({"32"}) public int size;
    @Param({"sha256"}) public String hash;
    @Param({"false"}) public boolean prehashed;
    @Param({"1"}) public long seed;
    @Param({"jce"}) public String provider;
    @Param({""}) public String out;

    private Ops.Op fn;

    @Setup(Level.Trial)
    public void prepare() throws Exception {
        fn = Ops.prepare(alg, op, size, hash, prehashed, seed, Main.provider(provider), Main.library(provider)).op;
    }

    @Benchmark
    public Object call() throws Exception {
        return fn.call();
    }
}
