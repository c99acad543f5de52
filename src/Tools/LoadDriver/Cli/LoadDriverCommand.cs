using System.CommandLine;
using System.CommandLine.Parsing;
using System.Globalization;
using DroneDelivery.LoadDriver.Results;
using DroneDelivery.LoadDriver.Scenarios;

namespace DroneDelivery.LoadDriver.Cli;

/// <summary>Where the command line writes, and whether standard output is a terminal.</summary>
internal sealed record CliConsole(TextWriter Out, TextWriter Error, bool IsTerminal);

/// <summary>
/// The command line: <c>invoice</c> and <c>delivery-requests</c>, each with a load shape (<c>--step</c> or
/// <c>--rate</c>), bounds, and scenario settings; <c>token</c> mints one development-issuer token (for curl).
/// Defaults are bounded and aimed at loopback.
/// </summary>
internal static class LoadDriverCommand
{
    public const int InvalidPlanExitCode = 2;

    /// <summary>The run was stopped by a signal; the results measured until then were still written.</summary>
    public const int CancelledExitCode = 130;
    private const string DefaultTarget = "http://127.0.0.1:5000/";
    private const string DefaultStep = "1:10:30s";

    public static async Task<int> RunAsync(string[] args, CliConsole console, CancellationToken cancellationToken = default)
    {
        var root = Build(console);
        // The caller owns signal handling and passes it in as the cancellation token.
        var configuration = new InvocationConfiguration { Output = console.Out, Error = console.Error, ProcessTerminationTimeout = null };
        return await root.Parse(args).InvokeAsync(configuration, cancellationToken).ConfigureAwait(false);
    }

    internal static RootCommand Build(CliConsole console)
    {
        var root = new RootCommand("Drone Delivery load driver: closed-model step load or open-model arrival rate, HDR latency percentiles, JSON/CSV results.");
        root.Subcommands.Add(BuildInvoice(console));
        root.Subcommands.Add(BuildDeliveryRequests(console));
        root.Subcommands.Add(BuildToken(console));
        return root;
    }

    /// <summary>One token from the development issuer's key, printed alone on standard output (<c>TOKEN=$(... token ...)</c>).</summary>
    private static Command BuildToken(CliConsole console)
    {
        var keyFile = new Option<FileInfo>("--signing-key-file")
        {
            Description = "A file holding the development issuer's base64 signing key (kind: the release's <release>-development-issuer Secret).",
            Required = true,
        };
        var issuer = new Option<string>("--issuer") { Description = "The token's iss.", DefaultValueFactory = _ => DroneDelivery.Security.Tokens.DevelopmentIssuer.DefaultIssuer };
        var audience = new Option<string>("--audience") { Description = "The token's aud.", DefaultValueFactory = _ => DroneDelivery.Security.Tokens.DevelopmentIssuer.DefaultAudience };
        var owner = new Option<string?>("--owner") { Description = "A customer's token: subject and owner claim this owner id, every delegated scope." };
        var asOperator = new Option<bool>("--operator") { Description = "An application's token with every app role: reads and writes for all owners." };
        var lifetime = DurationOption("--lifetime", "How long the token is valid.", DroneDelivery.Security.Tokens.DevelopmentIssuer.DefaultLifetime);
        var command = new Command("token", "Print a bearer token minted by the development issuer, as `dotnet user-jwts create` does, for curl or another client.");
        foreach (var option in new Option[] { keyFile, issuer, audience, owner, asOperator, lifetime })
        {
            command.Options.Add(option);
        }

        command.Validators.Add(result =>
        {
            if ((result.GetResult(owner) is null) == (result.GetResult(asOperator) is null))
            {
                result.AddError("Give either --owner ID (a customer's token) or --operator (every owner), one of them.");
            }
        });
        command.SetAction(parse =>
        {
            try
            {
                var development = ReadIssuer(parse.GetRequiredValue(keyFile), parse.GetRequiredValue(issuer), parse.GetRequiredValue(audience));
                var caller = parse.GetValue(owner) is { } id ? DroneDelivery.Security.Tokens.DevelopmentCaller.ForOwner(id) : DroneDelivery.Security.Tokens.DevelopmentCaller.Operator();
                console.Out.WriteLine(development.Issue(caller, parse.GetValue(lifetime)));
                return 0;
            }
            catch (ArgumentException e)
            {
                console.Error.WriteLine(e.Message);
                return InvalidPlanExitCode;
            }
        });
        return command;
    }

    /// <summary>The development issuer whose base64 key <paramref name="file"/> holds; an unreadable file or a bad key is an <see cref="ArgumentException"/> naming the option.</summary>
    private static DroneDelivery.Security.Tokens.DevelopmentIssuer ReadIssuer(FileInfo file, string issuer, string audience)
    {
        string key;
        try
        {
            key = File.ReadAllText(file.FullName);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw new ArgumentException($"--signing-key-file: cannot read '{file.FullName}': {e.Message}");
        }

        try
        {
            return DroneDelivery.Security.Tokens.DevelopmentIssuer.FromKey(key, issuer, audience);
        }
        catch (ArgumentException e)
        {
            throw new ArgumentException($"--signing-key-file '{file.FullName}': {e.Message}");
        }
    }

    private static Command BuildInvoice(CliConsole console)
    {
        var common = new CommonOptions("the gateway's base URL");
        var year = new Option<int>("--year")
        {
            Description = "Year the invoices were seeded for; default the current UTC year.",
            DefaultValueFactory = _ => DateTime.UtcNow.Year,
        };
        var months = new Option<(int First, int Last)>("--months")
        {
            Description = "Month or month range asked for, e.g. 3 or 1-12; default 1-12.",
            DefaultValueFactory = _ => (1, 12),
            CustomParser = r => Parse<(int, int)>(r, CliText.TryParseMonths),
        };
        var command = new Command("invoice", "GET the gateway's invoice for random seeded owners and months (scenario A).");
        common.AddTo(command);
        command.Options.Add(year);
        command.Options.Add(months);
        command.SetAction((parse, token) =>
        {
            var (first, last) = parse.GetValue(months);
            return ExecuteAsync(console, parse, common, token, target => new InvoiceScenario(new InvoiceScenarioOptions
            {
                Gateway = target,
                Owners = common.Owners(parse),
                Year = parse.GetValue(year),
                FirstMonth = first,
                LastMonth = last,
                Seed = parse.GetValue(common.Seed),
                Tokens = common.Tokens(parse),
            }));
        });
        return command;
    }

    private static Command BuildDeliveryRequests(CliConsole console)
    {
        var common = new CommonOptions("Ingestion's base URL");
        var statusBase = new Option<Uri?>("--status-base")
        {
            Description = "Base URL a relative Location header is resolved against; default the target.",
            CustomParser = r => Parse<Uri?>(r, TryParseUrl),
        };
        var poll = new Option<bool>("--poll") { Description = "Follow each accepted request's Location until the delivery completes, and report completion latency." };
        var pollInterval = DurationOption("--poll-interval", "Pause before each status poll of a delivery.", TimeSpan.FromMilliseconds(250));
        var pollMaxWait = DurationOption("--poll-max-wait", "Longest a delivery is followed, from its request's intended send time.", TimeSpan.FromSeconds(60));
        var maxPolls = new Option<int>("--max-polls") { Description = "Most status polls outstanding at once.", DefaultValueFactory = _ => 16 };
        var pollOneIn = new Option<int>("--poll-one-in") { Description = "Follow one accepted delivery in this many (a sample: fewer polls loading the system).", DefaultValueFactory = _ => 1 };
        var completedStage = new Option<string?>("--completed-stage") { Description = "Completed means a 200 whose JSON 'stage' equals this; default any 200." };
        var runId = new Option<string?>("--run-id") { Description = "Prefix of the package ids; default random." };
        var command = new Command("delivery-requests", "POST delivery requests to Ingestion and optionally follow them to completion (scenario B).");
        common.AddTo(command);
        command.Options.Add(statusBase);
        command.Options.Add(poll);
        command.Options.Add(pollInterval);
        command.Options.Add(pollMaxWait);
        command.Options.Add(maxPolls);
        command.Options.Add(pollOneIn);
        command.Options.Add(completedStage);
        command.Options.Add(runId);
        command.SetAction((parse, token) => ExecuteAsync(console, parse, common, token, target =>
        {
            var stage = parse.GetValue(completedStage);
            var completion = parse.GetValue(poll)
                ? new CompletionTracking
                {
                    PollInterval = parse.GetValue(pollInterval),
                    MaxWait = parse.GetValue(pollMaxWait),
                    MaxConcurrentPolls = parse.GetValue(maxPolls),
                    FollowOneIn = parse.GetValue(pollOneIn),
                    IsCompleted = string.IsNullOrWhiteSpace(stage) ? new CompletionTracking().IsCompleted : CompletionTracking.StageIs(stage),
                }
                : null;
            var options = new DeliveryRequestsScenarioOptions
            {
                Ingestion = target,
                StatusBase = parse.GetValue(statusBase),
                Owners = common.Owners(parse),
                Seed = parse.GetValue(common.Seed),
                Completion = completion,
                Tokens = common.Tokens(parse),
            };
            return new DeliveryRequestsScenario(parse.GetValue(runId) is { } id ? options with { RunId = id } : options);
        }));
        return command;
    }

    private static async Task<int> ExecuteAsync(
        CliConsole console,
        ParseResult parse,
        CommonOptions common,
        CancellationToken cancellationToken,
        Func<Uri, LoadScenario> createScenario)
    {
        LoadTestPlan plan;
        try
        {
            plan = common.Plan(parse, createScenario(parse.GetRequiredValue(common.Target)));
            plan.Validate();
        }
        catch (ArgumentException e)
        {
            await console.Error.WriteLineAsync($"error: {e.Message}").ConfigureAwait(false);
            return InvalidPlanExitCode;
        }

        var mode = parse.GetValue(common.Progress) switch
        {
            ProgressMode.Auto => console.IsTerminal ? ProgressMode.Live : ProgressMode.Plain,
            var chosen => chosen,
        };
        var title = $"{plan.Scenario.Name} → {plan.Scenario.Target}";
        await console.Out.WriteLineAsync($"{title}: {Describe(plan.Shape)}; bounds {plan.Bounds.MaxRequests} requests, {D(plan.Bounds.MaxDuration)}").ConfigureAwait(false);
        var display = new ProgressDisplay(mode, console.Out, parse.GetValue(common.ProgressEvery), title);
        var result = await display.ShowWhileAsync(LoadRunner.RunAsync(plan, display, cancellationToken)).ConfigureAwait(false);

        var report = result.ToReport();
        await console.Out.WriteAsync(Summary.Format(report)).ConfigureAwait(false);
        var directory = parse.GetValue(common.Output)
            ?? Path.Combine("artifacts", "load-driver", $"{plan.Scenario.Name}-{result.StartedAt.UtcDateTime.ToString("yyyyMMdd-HHmmss", CultureInfo.InvariantCulture)}");
        try
        {
            foreach (var file in report.WriteFiles(directory))
            {
                await console.Out.WriteLineAsync($"wrote {file}").ConfigureAwait(false);
            }
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            await console.Error.WriteLineAsync($"error: could not write the results to '{directory}': {e.Message}").ConfigureAwait(false);
            return InvalidPlanExitCode;
        }

        return result.StopReason == StopReason.Cancelled ? CancelledExitCode : 0;
    }

    internal static string Describe(LoadShape shape) => shape switch
    {
        ClosedLoad c => $"closed model, {c.UsersFrom}→{c.UsersTo} users over {D(c.Ramp)}, hold {D(c.Hold)}, think {D(c.ThinkTime)}",
        OpenLoad o => $"open model, {o.RateFrom}→{o.RateTo} req/s over {D(o.Ramp)}, hold {D(o.Hold)}",
        _ => shape.ToString(),
    };

    private static string D(TimeSpan duration) => CliText.FormatDuration(duration);

    private static Option<TimeSpan> DurationOption(string name, string description, TimeSpan defaultValue) => new(name)
    {
        Description = $"{description} Default {D(defaultValue)}.",
        DefaultValueFactory = _ => defaultValue,
        CustomParser = r => Parse<TimeSpan>(r, CliText.TryParseDuration),
    };

    private delegate bool TryParse<T>(string text, out T value, out string error);

    private static T? Parse<T>(ArgumentResult result, TryParse<T> parse)
    {
        if (result.Tokens.Count == 0)
        {
            return default;
        }

        if (parse(result.Tokens[0].Value, out var value, out var error))
        {
            return value;
        }

        result.AddError(error);
        return default;
    }

    private static bool TryParseUrl(string text, out Uri? url, out string error)
    {
        error = "";
        if (Uri.TryCreate(text, UriKind.Absolute, out url) && (url.Scheme == Uri.UriSchemeHttp || url.Scheme == Uri.UriSchemeHttps))
        {
            return true;
        }

        error = $"'{text}' is not an absolute http or https URL.";
        return false;
    }

    /// <summary>The options both scenarios share, and how they become a plan.</summary>
    private sealed class CommonOptions
    {
        public CommonOptions(string targetDescription)
        {
            Target = new Option<Uri>("--target")
            {
                Description = $"{targetDescription}; default {DefaultTarget} (loopback).",
                DefaultValueFactory = _ => new Uri(DefaultTarget),
                CustomParser = r => Parse<Uri?>(r, TryParseUrl),
            };
        }

        public Option<Uri> Target { get; }

        public Option<ClosedLoad?> Step { get; } = new("--step")
        {
            Description = $"Closed model: FROM:TO:RAMP[:HOLD] users, e.g. 1:40:8m. Default {DefaultStep} when --rate is not given.",
            CustomParser = r => Parse<ClosedLoad?>(r, CliText.TryParseStep),
        };

        public Option<OpenLoad?> Rate { get; } = new("--rate")
        {
            Description = "Open model: RATE:DURATION (e.g. 50:2m) or FROM:TO:RAMP[:HOLD] (e.g. 10:200:2m:1m) requests per second.",
            CustomParser = r => Parse<OpenLoad?>(r, CliText.TryParseRate),
        };

        public Option<TimeSpan> Think { get; } = DurationOption("--think", "Closed model: pause between a user's response and its next request.", TimeSpan.Zero);

        public Option<long> MaxRequests { get; } = new("--max-requests") { Description = "Stop after this many requests.", DefaultValueFactory = _ => new LoadBounds().MaxRequests };

        public Option<TimeSpan> MaxDuration { get; } = DurationOption("--max-duration", "Stop sending after this long, whatever the shape.", new LoadBounds().MaxDuration);

        public Option<TimeSpan> Timeout { get; } = DurationOption("--timeout", "Time a request may take before it counts as a timeout.", new HttpSettings().RequestTimeout);

        public Option<TimeSpan> ConnectTimeout { get; } = DurationOption("--connect-timeout", "Time a new connection may take to be established (at most --timeout); longer counts as a connection error.", new HttpSettings().ConnectTimeout);

        public Option<int?> Connections { get; } = new("--connections") { Description = "Connections to the target; default one per concurrent request." };

        public Option<int> MaxInFlight { get; } = new("--max-in-flight") { Description = "Open model: most requests outstanding at once.", DefaultValueFactory = _ => new HttpSettings().MaxInFlight };

        public Option<int> Seed { get; } = new("--seed") { Description = "Seed of the random choices; the same seed sends the same requests.", DefaultValueFactory = _ => 1 };

        public Option<int> OwnerCount { get; } = new("--owners") { Description = "How many owners were seeded.", DefaultValueFactory = _ => new SeededOwners().Count };

        public Option<string> OwnerFormat { get; } = new("--owner-format") { Description = "Composite format of the seeded owner ids.", DefaultValueFactory = _ => new SeededOwners().Format };

        public Option<string?> Output { get; } = new("--out") { Description = "Directory for result.json and the CSV files; default artifacts/load-driver/<scenario>-<time>." };

        public Option<FileInfo?> SigningKeyFile { get; } = new("--signing-key-file")
        {
            Description = "Development issuer: a file holding its base64 signing key (kind: the release's <release>-development-issuer Secret); each seeded owner's requests carry a token minted for that owner.",
        };

        public Option<string> Issuer { get; } = new("--issuer") { Description = "Development issuer: the tokens' iss.", DefaultValueFactory = _ => DroneDelivery.Security.Tokens.DevelopmentIssuer.DefaultIssuer };

        public Option<string> Audience { get; } = new("--audience") { Description = "Development issuer: the tokens' aud.", DefaultValueFactory = _ => DroneDelivery.Security.Tokens.DevelopmentIssuer.DefaultAudience };

        public Option<string?> Token { get; } = new("--token")
        {
            Description = "One bearer token for every request, e.g. an Entra ID application token with the roles that act for every owner. Default: no token unless --signing-key-file.",
        };

        public Option<string?> TokenScope { get; } = new("--token-scope")
        {
            Description = "An application's Entra ID tokens for this scope (e.g. api://<API app id>/.default), from the client credentials in " +
                "AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET, renewed before they expire. Default: no token unless --signing-key-file or --token.",
        };

        public Option<ProgressMode> Progress { get; } = new("--progress") { Description = "auto (live in a terminal, lines otherwise), live, plain or none.", DefaultValueFactory = _ => ProgressMode.Auto };

        public Option<TimeSpan> ProgressEvery { get; } = DurationOption("--progress-every", "Interval of plain progress lines.", TimeSpan.FromSeconds(5));

        public void AddTo(Command command)
        {
            foreach (var option in new Option[] { Target, Step, Rate, Think, MaxRequests, MaxDuration, Timeout, ConnectTimeout, Connections, MaxInFlight, Seed, OwnerCount, OwnerFormat, SigningKeyFile, Issuer, Audience, Token, TokenScope, Output, Progress, ProgressEvery })
            {
                command.Options.Add(option);
            }

            command.Validators.Add(result =>
            {
                if (result.GetResult(Step) is not null && result.GetResult(Rate) is not null)
                {
                    result.AddError("Give either --step (closed model) or --rate (open model), not both.");
                }

                if (result.GetResult(Rate) is not null && result.GetResult(Think) is not null)
                {
                    result.AddError("--think applies to the closed model (--step) only.");
                }

                if (new[] { result.GetResult(SigningKeyFile), result.GetResult(Token), result.GetResult(TokenScope) }.Count(r => r is not null) > 1)
                {
                    result.AddError("Give one of --signing-key-file (a token per owner), --token (one token) and --token-scope (an application's tokens), not more.");
                }
            });
        }

        public SeededOwners Owners(ParseResult parse) => new(parse.GetRequiredValue(OwnerFormat), parse.GetValue(OwnerCount));

        /// <summary>The requests' tokens; an unreadable or invalid key file is an invalid plan (<see cref="ArgumentException"/>).</summary>
        public AccessTokens Tokens(ParseResult parse)
        {
            if (parse.GetValue(Token) is { } token)
            {
                return AccessTokens.Fixed(token);
            }

            if (parse.GetValue(TokenScope) is { } scope)
            {
                return ClientCredentialTokens(scope);
            }

            return parse.GetValue(SigningKeyFile) is { } file
                ? AccessTokens.Minted(ReadIssuer(file, parse.GetRequiredValue(Issuer), parse.GetRequiredValue(Audience)))
                : AccessTokens.None;
        }

        public LoadTestPlan Plan(ParseResult parse, LoadScenario scenario)
        {
            LoadShape shape = parse.GetValue(Rate) is { } rate
                ? rate
                : (parse.GetValue(Step) ?? Parse(DefaultStep)) with { ThinkTime = parse.GetValue(Think) };
            return new LoadTestPlan
            {
                Scenario = scenario,
                Shape = shape,
                Bounds = new LoadBounds { MaxRequests = parse.GetValue(MaxRequests), MaxDuration = parse.GetValue(MaxDuration) },
                Http = new HttpSettings
                {
                    RequestTimeout = parse.GetValue(Timeout),
                    ConnectTimeout = parse.GetValue(ConnectTimeout),
                    MaxConnections = parse.GetValue(Connections),
                    MaxInFlight = parse.GetValue(MaxInFlight),
                },
            };
        }

        /// <summary>
        /// Tokens from the client credentials in the environment (Azure.Identity's names, as its EnvironmentCredential
        /// reads them; AZURE_AUTHORITY_HOST for another cloud); missing variables or a refused credential are an invalid plan.
        /// </summary>
        private static AccessTokens ClientCredentialTokens(string scope)
        {
            string[] names = ["AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET"];
            var missing = names.Where(n => string.IsNullOrWhiteSpace(Environment.GetEnvironmentVariable(n))).ToList();
            if (missing.Count > 0)
            {
                throw new ArgumentException($"--token-scope needs the client app's credentials in {string.Join(", ", names)}; {string.Join(", ", missing)} not set.");
            }

            var options = new Azure.Identity.ClientSecretCredentialOptions();
            if (Environment.GetEnvironmentVariable("AZURE_AUTHORITY_HOST") is { Length: > 0 } authority)
            {
                options.AuthorityHost = new Uri(authority);
            }

            var credential = new Azure.Identity.ClientSecretCredential(
                Environment.GetEnvironmentVariable(names[0]), Environment.GetEnvironmentVariable(names[1]), Environment.GetEnvironmentVariable(names[2]), options);
            try
            {
                return AccessTokens.FromCredential(credential, scope);
            }
            catch (Azure.Identity.AuthenticationFailedException e)
            {
                throw new ArgumentException($"--token-scope {scope}: no token for the client app {Environment.GetEnvironmentVariable(names[1])}: {e.Message}");
            }
        }

        private static ClosedLoad Parse(string step) =>
            CliText.TryParseStep(step, out var shape, out var error) ? shape! : throw new InvalidOperationException(error);
    }
}
