using System.CommandLine;
using System.Globalization;
using DroneDelivery.Lab;
using DroneDelivery.Lab.Measurement;
using DroneDelivery.Lab.Reporting;
using DroneDelivery.Lab.Scenarios;
using DroneDelivery.LocalProcesses;

// dotnet run --project src/Tools/Lab -- run A B --quick      replay both case studies (the README's main command)
// dotnet run --project src/Tools/Lab -- run A --full --steps A1,A3
// dotnet run --project src/Tools/Lab -- run B --steps B4 --set workflow.settings.Processor.PrefetchCount=0    B4 and a what-if of it
// dotnet run --project src/Tools/Lab -- compare artifacts/lab/<run 1> artifacts/lab/<run 2>
// dotnet run --project src/Tools/Lab -- soak --step B5 --duration 00:10:00 --users 20      exit code 0: no drift found, 1: what grows, per hour
// dotnet run --project src/Tools/Lab -- up --step A4          the system at a step, left running for a load of your own until Ctrl-C
// dotnet run --project src/Tools/Lab -- capacity --service gateway --step A4 --slo-p99 00:00:00.250 --target-rate 500
// dotnet run --project src/Tools/Lab -- chaos --quick [--step B5]      kill processes and fail dependencies under load; verdicts from the stores
// dotnet run --project src/Tools/Lab -- calibration [no-latency] > my.json; … run A --calibration my.json
DroneDelivery.Lab.Deployment.ChildRuntime.ApplyToChildren();
// Ctrl-C cancels the run; the lab then stops every process it started, which takes longer than
// System.CommandLine's default 2-second grace before it ends the process regardless.
return await LabCommands.Root().Parse(args).InvokeAsync(new InvocationConfiguration { ProcessTerminationTimeout = TimeSpan.FromMinutes(2) }).ConfigureAwait(false);

namespace DroneDelivery.Lab
{
    /// <summary>The lab's commands.</summary>
    internal static class LabCommands
    {
        /// <summary>The lab's command line: every command, and <c>--help</c>.</summary>
        public static RootCommand Root() =>
            new("Drone Delivery lab: runs the whole system on this machine and replays the tuning case studies step by step.")
            {
                Subcommands = { Run(), Soak(), Up(), Capacity(), Chaos(), Calibration(), Compare() },
            };

        public static Command Run()
        {
            var scenarios = new Argument<string[]>("scenarios") { Description = "Scenarios to replay: A, B (default both).", Arity = ArgumentArity.ZeroOrMore };
            var quick = new Option<bool>("--quick") { Description = "Tens of seconds per step, time compressed (the default)." };
            var full = new Option<bool>("--full") { Description = "The case studies' 8-minute step load per step." };
            var steps = new Option<string?>("--steps") { Description = "Only these steps, comma-separated (e.g. A1,A3,B4,B5)." };
            var output = OutputOption();
            var divisor = new Option<int?>("--replica-divisor") { Description = "Run the chart's replica counts divided by this (at least 1 each); default: the calibration's quickReplicaDivisor for scenario B in quick mode, otherwise 1." };
            var prometheus = PrometheusOption();
            var calibration = CalibrationOption();
            var measureOnce = new Option<bool>("--no-remeasure") { Description = "Keep a disturbed or machine-bound step's first measurement (flagged in the report) instead of measuring the step again." };
            var scale = new Option<double?>("--scale")
            {
                Description = $"Run the emulated cloud at this model scale (rates × it, injected latencies ÷ it) instead of the one a probe of this machine chooses; above {ModelScale.One} asks more of the machine than the article's system did of its cluster (at most {ModelScale.Maximum}).",
            };
            var values = new WhatIfOptions();
            var dashboard = DashboardOption();
            var profile = new Option<bool>("--profile") { Description = "Profile each step's busiest .NET process for a few seconds of its load and draw where its CPU goes as a flame graph (the profiler's pauses cost that process about a tenth of its work while it runs)." };
            var noTraces = new Option<bool>("--no-traces") { Description = $"Trace no requests: without it {LabRunner.TraceSamplingRatio:P0} of them are traced and each step's report draws a representative slow one as a waterfall." };
            var command = new Command("run", "Replay scenarios step by step, write the report and print a verdict per step.") { scenarios, quick, full, steps, output, divisor, prometheus, dashboard, profile, noTraces, calibration, measureOnce, scale };
            values.AddTo(command);
            command.SetAction(async (parse, cancellationToken) =>
            {
                if (parse.GetValue(quick) && parse.GetValue(full))
                {
                    Console.Error.WriteLine("Choose --quick or --full, not both.");
                    return 2;
                }

                var chosen = parse.GetValue(scenarios) is { Length: > 0 } names ? names : ["A", "B"];
                foreach (var name in chosen)
                {
                    if (!LabRunner.All.Any(s => string.Equals(s.Id, name, StringComparison.OrdinalIgnoreCase)))
                    {
                        Console.Error.WriteLine($"Unknown scenario '{name}'. Known: {string.Join(", ", LabRunner.All.Select(s => s.Id))}.");
                        return 2;
                    }
                }

                if (parse.GetValue(divisor) is < 1)
                {
                    Console.Error.WriteLine("--replica-divisor must be at least 1.");
                    return 2;
                }

                if (!TryCalibration(parse.GetValue(calibration), LabCalibration.DefaultProfile, out var calibrated))
                {
                    return 2;
                }

                if (parse.GetValue(scale) is { } forced && (!double.IsFinite(forced) || forced < calibrated.MinimumScale || forced > ModelScale.Maximum))
                {
                    Console.Error.WriteLine(string.Create(CultureInfo.InvariantCulture, $"--scale must be between {calibrated.MinimumScale} (the calibration's minimumScale) and {ModelScale.Maximum} (got {forced})."));
                    return 2;
                }

                var whatIf = values.Read(parse);
                var mode = parse.GetValue(full) ? LabMode.Full : LabMode.Quick;
                var options = new LabRunOptions
                {
                    WhatIf = whatIf,
                    Scenarios = [.. chosen.Select(s => s.ToUpperInvariant())],
                    Steps = parse.GetValue(steps)?.Split(',', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries) ?? [],
                    Mode = mode,
                    OutputDirectory = parse.GetValue(output) ?? DefaultOutput(),
                    ReplicaDivisor = parse.GetValue(divisor),
                    PrometheusPort = parse.GetValue(prometheus),
                    Dashboard = parse.GetValue(dashboard),
                    Profile = parse.GetValue(profile),
                    Traces = !parse.GetValue(noTraces),
                    Calibration = calibrated,
                    RemeasureDisturbed = !parse.GetValue(measureOnce),
                    Scale = parse.GetValue(scale),
                    Log = Log,
                };
                if (WhatIfOptions.Problem(options) is { } problem)
                {
                    Console.Error.WriteLine(problem);
                    return 2;
                }

                return await RunAsync(options, cancellationToken).ConfigureAwait(false);
            });
            return command;
        }

        public static Command Soak() => SoakRunner.Command(OutputOption(), DefaultOutput, Log);

        public static Command Up() => UpRunner.Command(OutputOption(), DefaultOutput, Log);

        public static Command Capacity() => CapacityRunner.Command(OutputOption(), DefaultOutput, Log);

        public static Command Chaos() => Lab.Chaos.ChaosRunner.Command(OutputOption(), DefaultOutput, Log);

        public static Command Compare() => ComparisonReport.Command(OutputOption(), () => DefaultOutput() + "-compare");

        /// <summary><c>calibration [profile|file]</c>: prints a calibration as JSON, the shape <c>--calibration</c> reads.</summary>
        public static Command Calibration()
        {
            var source = new Argument<string>("profile-or-file")
            {
                Description = $"A built-in profile ({string.Join(", ", LabCalibration.Profiles.Keys)}) or a calibration file to check.",
                DefaultValueFactory = _ => LabCalibration.DefaultProfile,
            };
            var command = new Command("calibration", "Print a calibration as JSON: edit it and pass it to run, soak or capacity with --calibration FILE.") { source };
            command.SetAction(parse =>
            {
                if (!TryCalibration(parse.GetValue(source), LabCalibration.DefaultProfile, out var calibration))
                {
                    return 2;
                }

                Console.WriteLine(CalibrationFile.ToJson(calibration));
                return 0;
            });
            return command;
        }

        /// <summary><c>--calibration</c>: a calibration file or a built-in profile.</summary>
        internal static Option<string?> CalibrationOption() =>
            new("--calibration")
            {
                Description = $"Calibration: a JSON file (as the calibration command prints) or a built-in profile ({string.Join(", ", LabCalibration.Profiles.Keys)}).",
            };

        /// <summary>Loads <paramref name="value"/> (or the <paramref name="fallback"/> profile when absent); prints why not and returns false when it cannot.</summary>
        internal static bool TryCalibration(string? value, string fallback, out LabCalibration calibration)
        {
            try
            {
                calibration = CalibrationFile.Load(value ?? fallback);
                return true;
            }
            catch (CalibrationException e)
            {
                Console.Error.WriteLine(e.Message);
                calibration = LabCalibration.Profiles[LabCalibration.DefaultProfile];
                return false;
            }
        }

        /// <summary>Exit code of a run some of whose steps were machine-bound, with every judged expectation met.</summary>
        internal const int MachineBoundExitCode = 5;

        /// <summary>Exit code of a run on a machine too small even at the smallest model scale: nothing was measured.</summary>
        internal const int MachineTooSmallExitCode = 4;

        /// <summary>
        /// Runs a command's work and maps how it ended to the exit code: its own on success, 130 when
        /// stopped with Ctrl-C (every process it started is stopped by then), 4 when the machine is too small
        /// for the lab, 3 when the local system could not be started.
        /// </summary>
        internal static async Task<int> ExitCodeAsync(string activity, Func<Task<int>> work, CancellationToken cancellationToken)
        {
            try
            {
                return await work().ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
            {
                Console.Error.WriteLine("Stopped; every process the lab started has been stopped.");
                return 130;
            }
            catch (MachineTooSmallException e)
            {
                Console.Error.WriteLine($"The {activity} did not run: {e.Message}");
                return MachineTooSmallExitCode;
            }
            catch (InvalidOperationException e)
            {
                Console.Error.WriteLine($"The {activity} could not run: {e.Message}");
                return 3;
            }
        }

        internal static Task<int> RunAsync(LabRunOptions options, CancellationToken cancellationToken) => ExitCodeAsync("lab", async () =>
        {
            Log($"report: {options.OutputDirectory} (calibration: {options.Calibration.Name})");
            var outcomes = await LabRunner.RunAsync(options, cancellationToken).ConfigureAwait(false);
            var index = await ReportWriter.WriteAsync(outcomes, options, cancellationToken).ConfigureAwait(false);
            Console.WriteLine();
            Console.WriteLine("Verdicts:");
            foreach (var verdict in outcomes.SelectMany(o => o.Verdicts))
            {
                Console.WriteLine("  " + LabRunner.Describe(verdict));
            }

            foreach (var disturbed in LabRunner.DisturbedSteps(outcomes))
            {
                Console.WriteLine("  note  " + LabRunner.DisturbanceNote(disturbed));
            }

            foreach (var machineBound in LabRunner.MachineBoundSteps(outcomes))
            {
                Console.WriteLine("  MACHINE-BOUND  " + LabRunner.MachineBoundNote(machineBound));
            }

            foreach (var prediction in outcomes.SelectMany(o => o.Predictions))
            {
                Console.WriteLine();
                Console.WriteLine("  " + prediction.Summary);
                foreach (var limit in prediction.Limits.OrderBy(l => l.Rate))
                {
                    Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"    {limit.Name,-28} {limit.Rate,8:0.0} completions/s  ({limit.How})"));
                }

                foreach (var input in prediction.Inputs)
                {
                    Console.WriteLine($"    {input.Name}: {input.Value}");
                }
            }

            foreach (var (whatIf, baseline) in WhatIfReport.Pairs(outcomes))
            {
                Console.WriteLine();
                Console.WriteLine($"{whatIf.Step.Label} ({whatIf.Step.WhatIf!.Arguments}) vs {baseline.Step.Label}:");
                Console.Write(Comparison.ConsoleTable(Comparison.Rows(StepFigures.Of(baseline), StepFigures.Of(whatIf)), baseline.Step.Label, whatIf.Step.Label));
            }

            var failed = outcomes.SelectMany(o => o.Verdicts).Count(v => v.Counts && !v.Passed);
            var bound = LabRunner.MachineBoundSteps(outcomes).Count();
            Console.WriteLine();
            Console.WriteLine($"Report: {index}");
            Console.WriteLine(failed > 0
                ? $"{failed} expectation(s) not met."
                : bound > 0
                    ? $"{bound} step(s) machine-bound: their expectations were not judged; every judged one was met."
                    : "Every step showed the effect its article describes.");
            return failed > 0 ? 1 : bound > 0 ? MachineBoundExitCode : 0;
        }, cancellationToken);

        /// <summary><c>--prometheus [port]</c>: a real Prometheus scraping the system (default port 9090).</summary>
        internal static Option<int?> PrometheusOption() =>
            new("--prometheus")
            {
                Description = "Start Prometheus on 127.0.0.1:<port> (default 9090), scraping every component every 2 s.",
                Arity = ArgumentArity.ZeroOrOne,
                CustomParser = result => result.Tokens.Count == 0 ? 9090 : int.Parse(result.Tokens[0].Value, CultureInfo.InvariantCulture),
            };

        internal static Option<bool> DashboardOption() =>
            new("--dashboard")
            {
                Description = "Start the Aspire dashboard on 127.0.0.1 (its address is printed) and send it every process's traces, metrics and logs.",
            };

        private static Option<string?> OutputOption() =>
            new("--output") { Description = "Report directory (default artifacts/lab/<timestamp>)." };

        private static string DefaultOutput() =>
            RepositoryLayout.InRepository("artifacts", "lab", DateTime.Now.ToString("yyyyMMdd-HHmmss", CultureInfo.InvariantCulture));

        private static void Log(string message) =>
            Console.WriteLine($"[{DateTime.Now:HH:mm:ss}] {message}");
    }
}
