package secperf.jmh;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

/**
 * A JMH profiler (`-prof secperf.jmh.CpuProfiler`) that adds the benchmark threads' CPU time per
 * operation to each iteration ("cpu.us/op"), read with ThreadMXBean around the iteration. The
 * benchmark itself is untouched; benchmarks/libraries.py uses it on the Reference run so that its
 * figure can be compared with secperf's CPU time per operation when the machine is too busy for
 * wall times (which include waiting for a CPU) to agree.
 */
public class CpuProfiler implements InternalProfiler {
    private final ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    private Map<Long, Long> start = new HashMap<>();

    private Map<Long, Long> workers() {
        Map<Long, Long> cpu = new HashMap<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().contains("jmh-worker")) {
                long c = mx.getThreadCpuTime(t.getId());
                if (c >= 0) cpu.put(t.getId(), c);
            }
        }
        return cpu;
    }

    @Override
    public String getDescription() {
        return "CPU time of the benchmark threads per operation (ThreadMXBean)";
    }

    @Override
    public void beforeIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams) {
        start = workers();
    }

    @Override
    public Collection<? extends Result> afterIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams,
                                                       IterationResult result) {
        long used = 0;
        for (Map.Entry<Long, Long> e : workers().entrySet())
            used += e.getValue() - start.getOrDefault(e.getKey(), 0L);
        long ops = result.getMetadata().getMeasuredOps();
        double perOp = ops > 0 ? used / 1000.0 / ops : Double.NaN;
        return List.of(new ScalarResult("cpu.us/op", perOp, "us/op", AggregationPolicy.AVG));
    }
}
