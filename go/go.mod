module secperf/go

go 1.21
