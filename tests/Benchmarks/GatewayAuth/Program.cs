using System.CommandLine;
using System.Globalization;
using System.Text;
using HdrHistogram;
using DroneDelivery.Security.Tokens;
using DroneDelivery.Benchmarks.GatewayAuth;
using DroneDelivery.LoadDriver;
using DroneDelivery.LoadDriver.Scenarios;
using DroneDelivery.LocalProcesses;
using DroneDelivery.TestSupport;

// The gateway's real program twice, on 127.0.0.1, in front of one in-process app answering its three
// backends' summaries at once: "validating" checks every request's token (signature, issuer, audience,
// lifetime, scope and owner), as deployed; "baseline" runs Authentication:Mode None (Development only) and
// checks nothing. Both run in the Development environment, so Authentication is all that differs; both get
// the same requests with the same tokens, in alternating slices, so other work on the machine hits both alike.
var (parse, exitCode) = await BenchmarkOptions.ParseAsync(Settings.Command(), args);
if (parse is null)
{
    return exitCode;
}

var settings = Settings.From(parse);

var loadAtStart = LoadAverage();
await using var backends = await InstantBackends.StartAsync();
var issuer = DevelopmentIssuer.Generate();
await using var validating = await Gateway.StartAsync("validating", backends.BaseAddress, issuer.ServiceEnvironment());
await using var baseline = await Gateway.StartAsync("baseline", backends.BaseAddress, new Dictionary<string, string> { ["Authentication__Mode"] = "None" });
Gateway[] both = [baseline, validating];
var tokens = AccessTokens.Minted(issuer);

Console.WriteLine($"Warm-up: {settings.WarmUp.TotalSeconds:0} s at {settings.Rate} req/s on each gateway…");
foreach (var gateway in both)
{
    await gateway.RunAsync(settings.Rate, settings.WarmUp, tokens);
}

Console.WriteLine($"Same load: {settings.Rate} req/s, {settings.Slices} alternating slices of {settings.SliceSeconds} s per gateway");
var sameLoad = both.ToDictionary(g => g.Name, _ => new List<Slice>());
for (var i = 0; i < settings.Slices; i++)
{
    foreach (var gateway in i % 2 == 0 ? both : both.Reverse())
    {
        var slice = await gateway.RunAsync(settings.Rate, TimeSpan.FromSeconds(settings.SliceSeconds), tokens);
        sameLoad[gateway.Name].Add(slice);
        Console.WriteLine($"  {gateway.Name,-10} slice {i + 1}: {slice}");
    }
}

Console.WriteLine($"Capacity: rates from {settings.StartRate} req/s × {settings.Factor} until the p99 objective ({settings.SloMilliseconds} ms) breaks on both");
var capacity = both.ToDictionary(g => g.Name, _ => new List<(double Rate, Slice Slice)>());
var broken = new HashSet<string>(StringComparer.Ordinal);
for (var rate = (double)settings.StartRate; broken.Count < both.Length && rate <= settings.MaxRate; rate *= settings.Factor)
{
    foreach (var gateway in both.Where(g => !broken.Contains(g.Name)))
    {
        var slice = await gateway.RunAsync(Math.Round(rate), TimeSpan.FromSeconds(settings.SliceSeconds), tokens);
        capacity[gateway.Name].Add((Math.Round(rate), slice));
        var met = slice.Meets(settings.SloMilliseconds, Math.Round(rate));
        Console.WriteLine($"  {gateway.Name,-10} {Math.Round(rate),6:0} req/s: {slice} {(met ? "meets" : "BREAKS")} the objective");
        if (!met)
        {
            broken.Add(gateway.Name);
        }
    }
}

var report = new Report(settings, sameLoad, capacity, $"{loadAtStart} at start, {LoadAverage()} at end", string.Join(' ', args));
Console.WriteLine();
Console.WriteLine(report.Summary());
if (settings.Output is { } output)
{
    await File.WriteAllTextAsync(output, report.Markdown());
    Console.WriteLine($"wrote {output}");
}

return 0;

static string LoadAverage() =>
    File.Exists("/proc/loadavg") ? string.Join(", ", File.ReadAllText("/proc/loadavg").Split(' ').Take(3)) : "n/a";

namespace DroneDelivery.Benchmarks.GatewayAuth
{
    /// <summary>The benchmark's options.</summary>
    internal sealed record Settings(int Rate, int Slices, int SliceSeconds, TimeSpan WarmUp, int StartRate, double Factor, int MaxRate, double SloMilliseconds, string? Output)
    {
        private static readonly Option<int> RateOption = BenchmarkOptions.Positive("--rate", 200, "Invoices per second of the same-load comparison.");
        private static readonly Option<int> SlicesOption = BenchmarkOptions.Positive("--slices", 6, "Alternating slices per gateway.");
        private static readonly Option<int> SliceSecondsOption = BenchmarkOptions.Positive("--slice-seconds", 10, "Seconds per slice.");
        private static readonly Option<int> WarmUpOption = BenchmarkOptions.Positive("--warmup", 10, "Unmeasured seconds per gateway first.");
        private static readonly Option<int> StartRateOption = BenchmarkOptions.Positive("--start-rate", 200, "The capacity search's first rate.");
        private static readonly Option<double> FactorOption = BenchmarkOptions.Above("--factor", 1, 1.5, "The capacity search's step: each rate this times the last.");
        private static readonly Option<int> MaxRateOption = BenchmarkOptions.Positive("--max-rate", 20_000, "The capacity search's highest rate.");
        private static readonly Option<int> SloOption = BenchmarkOptions.Positive("--slo-p99-ms", 50, "The p99 objective in milliseconds.");
        private static readonly Option<string> OutputOption = new("--output") { Description = "The report.", DefaultValueFactory = _ => RepositoryLayout.InRepository("docs", "benchmarks", "gateway-auth.md") };
        private static readonly Option<bool> NoOutputOption = new("--no-output") { Description = "Print the report only." };

        public static RootCommand Command() =>
            new("The cost of token validation at the edge: the gateway with and without it, under the same load.")
            {
                RateOption, SlicesOption, SliceSecondsOption, WarmUpOption, StartRateOption, FactorOption, MaxRateOption, SloOption, OutputOption, NoOutputOption,
            };

        public static Settings From(ParseResult parse) => new(
            parse.GetValue(RateOption),
            parse.GetValue(SlicesOption),
            parse.GetValue(SliceSecondsOption),
            TimeSpan.FromSeconds(parse.GetValue(WarmUpOption)),
            parse.GetValue(StartRateOption),
            parse.GetValue(FactorOption),
            parse.GetValue(MaxRateOption),
            parse.GetValue(SloOption),
            parse.GetValue(NoOutputOption) ? null : Path.GetFullPath(parse.GetValue(OutputOption)!));

    }

    /// <summary>One measured slice of open-model load on one gateway: its latency histogram (µs) and the gateway's CPU time.</summary>
    internal sealed record Slice(double Intended, double Throughput, HistogramBase Latency, long Errors, long Requests, TimeSpan Cpu)
    {
        public double P50Ms => Percentile(50);

        public double P99Ms => Percentile(99);

        public double CpuMicrosecondsPerRequest => Requests > 0 ? Cpu.TotalMicroseconds / Requests : double.NaN;

        /// <summary>p99 within the objective, (almost) every request answered 2xx, and the intended rate reached.</summary>
        public bool Meets(double sloMilliseconds, double rate) =>
            P99Ms <= sloMilliseconds && Errors <= Requests / 1000 && Throughput >= 0.95 * rate;

        /// <summary>Several slices as one: their latencies pooled in one histogram, their requests and CPU time summed.</summary>
        public static Slice Pooled(IReadOnlyList<Slice> slices)
        {
            var latency = slices[0].Latency.Copy();
            foreach (var slice in slices.Skip(1))
            {
                latency.Add(slice.Latency);
            }

            return new Slice(
                slices[0].Intended,
                slices.Average(s => s.Throughput),
                latency,
                slices.Sum(s => s.Errors),
                slices.Sum(s => s.Requests),
                slices.Aggregate(TimeSpan.Zero, (sum, s) => sum + s.Cpu));
        }

        public override string ToString() =>
            string.Create(CultureInfo.InvariantCulture, $"{Throughput,7:0.0} req/s, p50 {P50Ms,6:0.00} ms, p99 {P99Ms,7:0.00} ms, errors {Errors}, {CpuMicrosecondsPerRequest,5:0} µs CPU/request");

        private double Percentile(double percentile) =>
            Latency.TotalCount > 0 ? Latency.GetValueAtPercentile(percentile) / 1000.0 : double.NaN;
    }

    /// <summary>A gateway process and the load driver's open-model load against it.</summary>
    internal sealed class Gateway : IAsyncDisposable
    {
        private readonly LocalProcess _process;
        private readonly Uri _address;

        private Gateway(string name, LocalProcess process, Uri address)
        {
            Name = name;
            _process = process;
            _address = address;
        }

        public string Name { get; }

        public static async Task<Gateway> StartAsync(string name, Uri backends, IReadOnlyDictionary<string, string> authentication)
        {
            var port = FreePort.Next();
            var environment = new Dictionary<string, string?>
            {
                // Mode None is allowed only there; the validating gateway runs there too, to differ in nothing else.
                ["ASPNETCORE_ENVIRONMENT"] = "Development",
                ["DOTNET_gcServer"] = "0",
                ["Logging__LogLevel__Default"] = "Warning",
                ["Backends__Delivery__BaseAddress"] = backends.ToString(),
                ["Backends__Package__BaseAddress"] = backends.ToString(),
                ["Backends__DroneScheduler__BaseAddress"] = backends.ToString(),
                // Far above the load: the limiter runs on both, but never refuses.
                ["RateLimiting__PermitLimit"] = "1000000",
            };
            foreach (var (key, value) in authentication)
            {
                environment[key] = value;
            }

            var process = await LocalProcess.StartAsync(LocalProcessSpec.ForProject(name, "DroneDelivery.Gateway", "--urls", $"http://127.0.0.1:{port}") with { Environment = environment });
            var address = new Uri($"http://127.0.0.1:{port}/");
            using var http = new HttpClient { Timeout = TimeSpan.FromSeconds(5) };
            var deadline = DateTimeOffset.UtcNow + TimeSpan.FromMinutes(2);
            while (true)
            {
                if (process.Exited.IsCompleted)
                {
                    throw new InvalidOperationException($"The {name} gateway exited: {string.Join(Environment.NewLine, process.RecentOutput)}");
                }

                try
                {
                    using var health = await http.GetAsync(new Uri(address, "health/live"));
                    if (health.IsSuccessStatusCode)
                    {
                        break;
                    }
                }
                catch (Exception e) when (e is HttpRequestException or TaskCanceledException)
                {
                    // Not listening yet.
                }

                if (DateTimeOffset.UtcNow > deadline)
                {
                    throw new TimeoutException($"The {name} gateway did not answer /health/live within 2 minutes.");
                }

                await Task.Delay(100);
            }

            return new Gateway(name, process, address);
        }

        /// <summary>Invoices of 100 owners at a constant arrival rate, each request with its owner's token.</summary>
        public async Task<Slice> RunAsync(double rate, TimeSpan duration, AccessTokens tokens)
        {
            var cpuBefore = _process.TotalProcessorTime;
            var result = await LoadRunner.RunAsync(new LoadTestPlan
            {
                Scenario = new InvoiceScenario(new InvoiceScenarioOptions { Gateway = _address, Year = 2025, Tokens = tokens }),
                Shape = OpenLoad.Constant(rate, duration),
                Bounds = new LoadBounds { MaxDuration = duration + TimeSpan.FromSeconds(30) },
                Http = new HttpSettings { RequestTimeout = TimeSpan.FromSeconds(10) },
            }, null, CancellationToken.None);
            return new Slice(rate, result.Totals.SuccessesPerSecond, result.RequestLatency, result.Totals.Errors, result.Totals.Requests, _process.TotalProcessorTime - cpuBefore);
        }

        public ValueTask DisposeAsync() => _process.DisposeAsync();
    }

    /// <summary>The figures, as a console summary and as docs/benchmarks/gateway-auth.md.</summary>
    internal sealed class Report(Settings settings, Dictionary<string, List<Slice>> sameLoad, Dictionary<string, List<(double Rate, Slice Slice)>> capacity, string loadAverage, string arguments)
    {
        private Slice Average(string gateway) => Slice.Pooled(sameLoad[gateway]);

        /// <summary>The lowest and highest p99 of the gateway's slices: how much the machine moved during the run.</summary>
        private string P99Spread(string gateway) =>
            string.Create(CultureInfo.InvariantCulture, $"{sameLoad[gateway].Min(s => s.P99Ms):0.00}–{sameLoad[gateway].Max(s => s.P99Ms):0.00}");

        private double Capacity(string gateway) =>
            capacity[gateway].Where(point => point.Slice.Meets(settings.SloMilliseconds, point.Rate)).Select(point => point.Rate).DefaultIfEmpty(0).Max();

        public string Summary()
        {
            var (b, v) = (Average("baseline"), Average("validating"));
            return string.Create(CultureInfo.InvariantCulture,
                $"same load {settings.Rate} req/s: p99 {v.P99Ms:0.00} ms vs {b.P99Ms:0.00} ms ({v.P99Ms / b.P99Ms:0.00}×), CPU {v.CpuMicrosecondsPerRequest:0} vs {b.CpuMicrosecondsPerRequest:0} µs/request ({v.CpuMicrosecondsPerRequest / b.CpuMicrosecondsPerRequest:0.00}×)\n"
                + $"highest rate with p99 ≤ {settings.SloMilliseconds} ms: {Capacity("validating"):0} vs {Capacity("baseline"):0} req/s ({Capacity("validating") / Math.Max(1, Capacity("baseline")):0.00}×)");
        }

        public string Markdown()
        {
            var (b, v) = (Average("baseline"), Average("validating"));
            var text = new StringBuilder();
            text.AppendLine("# The cost of token validation at the gateway");
            text.AppendLine();
            text.AppendLine("What validating every request's bearer token costs the gateway: its real program with token validation");
            text.AppendLine("(`Authentication:Mode DevelopmentIssuer`: HMAC-SHA256 signature, issuer, audience, lifetime, then the scope and");
            text.AppendLine("owner checks) next to the same program with `Authentication:Mode None` (the Development-only mode that checks");
            text.AppendLine("nothing), under the same load in the same run. The ratios are the figures to compare between machines.");
            text.AppendLine();
            text.AppendLine("Command of the run below (from the repository root; rewrites this file):");
            text.AppendLine();
            text.AppendLine("```");
            text.AppendLine("dotnet build -c Release tests/Benchmarks/GatewayAuth/DroneDelivery.Benchmarks.GatewayAuth.csproj");
            text.AppendLine("nice -n 10 dotnet run -c Release --no-build --project tests/Benchmarks/GatewayAuth" + (arguments.Length > 0 ? " -- " + arguments : string.Empty));
            text.AppendLine("```");
            text.AppendLine();
            text.AppendLine($"Options: `--rate N` of the same-load comparison ({settings.Rate}), `--slices N` ({settings.Slices}), `--slice-seconds N` ({settings.SliceSeconds}),");
            text.AppendLine($"`--warmup N` seconds ({settings.WarmUp.TotalSeconds:0}), `--start-rate N` ({settings.StartRate}) and `--factor F` ({settings.Factor}) of the capacity search,");
            text.AppendLine($"`--slo-p99-ms N` ({settings.SloMilliseconds}), `--max-rate N`, `--output PATH` or `--no-output`.");
            text.AppendLine();
            text.AppendLine("## Latest run");
            text.AppendLine();
            text.AppendLine(string.Create(CultureInfo.InvariantCulture, $"- When: {DateTimeOffset.UtcNow:yyyy-MM-dd HH:mm} UTC"));
            text.AppendLine($"- Machine: {Environment.ProcessorCount} logical cores, {System.Runtime.InteropServices.RuntimeInformation.OSDescription}, .NET {Environment.Version}");
            text.AppendLine($"- Other work on the machine (load average 1, 5, 15 min): {loadAverage}");
            text.AppendLine();
            text.AppendLine(string.Create(CultureInfo.InvariantCulture, $"Same load: {settings.Rate} invoices/s (open model), {settings.Slices} alternating slices of {settings.SliceSeconds} s per gateway; percentiles over all their requests, CPU time over all their requests:"));
            text.AppendLine();
            text.AppendLine("| gateway | throughput (req/s) | p50 (ms) | p99 (ms) | p99 of a slice, lowest–highest (ms) | errors | gateway CPU (µs/request) |");
            text.AppendLine("|---|---:|---:|---:|---:|---:|---:|");
            foreach (var (label, name, slice) in new[] { ("baseline (no validation)", "baseline", b), ("validating", "validating", v) })
            {
                text.AppendLine(string.Create(CultureInfo.InvariantCulture, $"| {label} | {slice.Throughput:0.0} | {slice.P50Ms:0.00} | {slice.P99Ms:0.00} | {P99Spread(name)} | {slice.Errors} | {slice.CpuMicrosecondsPerRequest:0} |"));
            }

            text.AppendLine(string.Create(CultureInfo.InvariantCulture, $"| **ratio** validating ÷ baseline | {v.Throughput / b.Throughput:0.00} | {v.P50Ms / b.P50Ms:0.00} | {v.P99Ms / b.P99Ms:0.00} | | | {v.CpuMicrosecondsPerRequest / b.CpuMicrosecondsPerRequest:0.00} |"));
            text.AppendLine();
            text.AppendLine(string.Create(CultureInfo.InvariantCulture, $"Capacity: the highest arrival rate whose p99 stays within {settings.SloMilliseconds} ms (with fewer than 0.1 % errors and at least 95 % of the rate served), rates from {settings.StartRate} req/s × {settings.Factor}:"));
            text.AppendLine();
            text.AppendLine("| rate (req/s) | baseline p99 (ms) | validating p99 (ms) | baseline CPU (µs/req) | validating CPU (µs/req) |");
            text.AppendLine("|---:|---:|---:|---:|---:|");
            foreach (var rate in capacity.Values.SelectMany(points => points.Select(p => p.Rate)).Distinct().Order())
            {
                string Cell(string gateway, Func<Slice, double> figure, string format, bool mark) =>
                    capacity[gateway].Where(p => p.Rate == rate).Select(p => figure(p.Slice).ToString(format, CultureInfo.InvariantCulture) + (mark && !p.Slice.Meets(settings.SloMilliseconds, rate) ? " ✗" : string.Empty)).FirstOrDefault() ?? "—";
                text.AppendLine(string.Create(CultureInfo.InvariantCulture, $"| {rate:0} | {Cell("baseline", s => s.P99Ms, "0.00", true)} | {Cell("validating", s => s.P99Ms, "0.00", true)} | {Cell("baseline", s => s.CpuMicrosecondsPerRequest, "0", false)} | {Cell("validating", s => s.CpuMicrosecondsPerRequest, "0", false)} |"));
            }

            text.AppendLine();
            text.AppendLine(string.Create(CultureInfo.InvariantCulture, $"Highest rate within the objective: baseline **{Capacity("baseline"):0} req/s**, validating **{Capacity("validating"):0} req/s** (ratio **{Capacity("validating") / Math.Max(1, Capacity("baseline")):0.00}**). ✗ marks a rate that broke it; a single slice on a shared machine can break it by noise alone, so compare the same-load ratios first."));
            text.AppendLine();
            text.AppendLine("## What is measured");
            text.AppendLine();
            text.AppendLine("- Both gateways are the real `DroneDelivery.Gateway` program, each a process of its own on 127.0.0.1 with the same");
            text.AppendLine("  settings except `Authentication`; the rate limiter runs in both with a limit the load never reaches.");
            text.AppendLine("- Their backends are one app in the benchmark's process answering the three monthly summaries at once, so the");
            text.AppendLine("  gateway's own work (routing, authentication, authorization, the parallel fan-out, the aggregation) is what is measured.");
            text.AppendLine("- Both run in the Development environment (Mode None is allowed only there), so Authentication is all that differs.");
            text.AppendLine("- The load is the load driver's invoice scenario (100 owners, each request with that owner's token, minted once per");
            text.AppendLine("  owner as the lab does) at a constant arrival rate, latency measured from the intended send time (no coordinated");
            text.AppendLine("  omission). Both gateways get the same requests with the same tokens; the baseline ignores them.");
            text.AppendLine("- Slices alternate between the gateways so that other work on the machine affects both alike. CPU per request is");
            text.AppendLine("  the gateway process's CPU time divided by its requests. The load driver, the backends app and both gateways share the cores.");
            text.AppendLine("- Reading a run: where the two gateways' ranges of slice p99 overlap, the p99 difference is within the machine's");
            text.AppendLine("  noise, and the CPU time per request is the steadier measure of the cost; on a quieter machine, more and longer");
            text.AppendLine("  slices (`--slices`, `--slice-seconds`) narrow the ranges.");
            return text.ToString();
        }
    }
}
