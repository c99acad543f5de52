using System.CommandLine;
using System.Globalization;
using Azure.Identity;
using DroneDelivery.Contracts;
using DroneDelivery.ServiceClients.Cosmos;
using Microsoft.Azure.Cosmos;
using Microsoft.Extensions.Configuration;

namespace DroneDelivery.DroneScheduler.Seeding;

/// <summary>
/// <c>dotnet DroneDelivery.DroneScheduler.dll seed [options]</c>: provisions the database and the
/// packages, drones and utilization containers, and loads the deterministic utilization data set of
/// scenario A. The account comes, like the service's, from a key — <c>--connection-string</c> or
/// <c>Cosmos:ConnectionString</c> — or from Entra ID — <c>--account-endpoint</c> or
/// <c>Cosmos:AccountEndpoint</c> with DefaultAzureCredential, which only loads data
/// (<c>--load-only</c>): data-plane roles cannot create containers or change throughput. Exit
/// codes: 0 done, 1 failed, 2 bad arguments.
/// </summary>
public static class SeedCommand
{
    public const string Name = "seed";

    public static async Task<int> RunAsync(string[] args, TextWriter? output = null, TextWriter? error = null)
    {
        output ??= Console.Out;
        error ??= Console.Error;
        var parsed = Build(output, error).Parse(args);
        if (parsed.Errors.Count > 0)
        {
            foreach (var parseError in parsed.Errors)
            {
                await error.WriteLineAsync($"seed: {parseError.Message}");
            }

            return 2;
        }

        return await parsed.InvokeAsync(new InvocationConfiguration { Output = output, Error = error });
    }

    /// <summary>The command: its options, and the action that validates them and seeds (exit code 0 done, 1 failed, 2 bad arguments).</summary>
    public static RootCommand Build(TextWriter output, TextWriter error)
    {
        var defaults = new SeedOptions();
        var configuration = new ConfigurationBuilder().AddEnvironmentVariables().Build();

        var connectionString = new Option<string?>("--connection-string")
        {
            Description = "Cosmos DB connection string (AccountEndpoint=...;AccountKey=...;). Default: Cosmos:ConnectionString.",
            DefaultValueFactory = _ => configuration["Cosmos:ConnectionString"],
        };
        var accountEndpoint = new Option<string?>("--account-endpoint")
        {
            Description = "Cosmos DB account endpoint for Entra ID (DefaultAzureCredential); requires --load-only. Default: Cosmos:AccountEndpoint.",
            DefaultValueFactory = _ => configuration["Cosmos:AccountEndpoint"],
        };
        var database = new Option<string>("--database") { Description = "Database id.", DefaultValueFactory = _ => configuration["Cosmos:DatabaseId"] ?? defaults.DatabaseId };
        var container = new Option<string>("--container") { Description = "Utilization container id.", DefaultValueFactory = _ => defaults.UtilizationContainerId };
        var partitionKeyPath = new Option<string>("--partition-key-path")
        {
            Description = "Partition key path of the utilization container: /partitionKey (delivery id) or /ownerId.",
            DefaultValueFactory = _ => defaults.PartitionKeyPath,
        };
        partitionKeyPath.AcceptOnlyFromAmong(UtilizationSettings.ByDelivery, UtilizationSettings.ByOwner);
        var throughput = new Option<int>("--throughput") { Description = "RU/s of the utilization container (replaced if it exists).", DefaultValueFactory = _ => defaults.Throughput };
        var loadThroughput = new Option<int?>("--load-throughput") { Description = "RU/s while loading, then set back to --throughput." };
        var otherThroughput = new Option<int>("--other-throughput") { Description = "RU/s of the packages and drones containers when created.", DefaultValueFactory = _ => defaults.OtherThroughput };
        var packages = new Option<string>("--packages-container") { Description = "Packages container id.", DefaultValueFactory = _ => defaults.PackagesContainerId };
        var drones = new Option<string>("--drones-container") { Description = "Drones container id.", DefaultValueFactory = _ => defaults.DronesContainerId };
        var owners = new Option<int>("--owners") { Description = "Owners owner-0000 … (count).", DefaultValueFactory = _ => defaults.Owners };
        var firstMonth = new Option<string>("--first-month") { Description = "First billing month, yyyy-MM.", DefaultValueFactory = _ => defaults.FirstMonth.ToString() };
        var months = new Option<int>("--months") { Description = "Consecutive months (count).", DefaultValueFactory = _ => defaults.Months };
        var deliveries = new Option<int>("--deliveries") { Description = "Documents per owner per month (count).", DefaultValueFactory = _ => defaults.DeliveriesPerOwnerMonth };
        var seed = new Option<int>("--seed") { Description = "Seed of the generated values.", DefaultValueFactory = _ => defaults.Seed };
        var concurrency = new Option<int>("--concurrency") { Description = "Upserts in flight at once.", DefaultValueFactory = _ => defaults.Concurrency };
        var fleetSize = new Option<int>("--fleet-size") { Description = "Drones the documents are spread over.", DefaultValueFactory = _ => defaults.FleetSize };
        var provisionOnly = new Option<bool>("--provision-only") { Description = "Only create the database and containers; load nothing." };
        var loadOnly = new Option<bool>("--load-only") { Description = "Only load the existing utilization container; create nothing, change no throughput." };

        var command = new RootCommand("Provisions the Cosmos DB containers and loads the utilization data set of scenario A.")
        {
            connectionString, accountEndpoint, database, container, partitionKeyPath, throughput, loadThroughput, otherThroughput, packages, drones,
            owners, firstMonth, months, deliveries, seed, concurrency, fleetSize, provisionOnly, loadOnly,
        };
        command.SetAction(async (result, cancellationToken) =>
        {
            var problems = new List<string>();
            if (!TryParseMonth(result.GetValue(firstMonth), out var first))
            {
                problems.Add("--first-month must be yyyy-MM, e.g. 2025-01.");
            }

            var options = new SeedOptions
            {
                DatabaseId = result.GetValue(database)!,
                UtilizationContainerId = result.GetValue(container)!,
                PartitionKeyPath = result.GetValue(partitionKeyPath)!,
                Throughput = result.GetValue(throughput),
                LoadThroughput = result.GetValue(loadThroughput),
                OtherThroughput = result.GetValue(otherThroughput),
                PackagesContainerId = result.GetValue(packages)!,
                DronesContainerId = result.GetValue(drones)!,
                Owners = result.GetValue(owners),
                FirstMonth = first,
                Months = result.GetValue(months),
                DeliveriesPerOwnerMonth = result.GetValue(deliveries),
                Seed = result.GetValue(seed),
                Concurrency = result.GetValue(concurrency),
                FleetSize = result.GetValue(fleetSize),
                ProvisionOnly = result.GetValue(provisionOnly),
                LoadOnly = result.GetValue(loadOnly),
            };
            problems.AddRange(options.Validate());
            var account = Account(result.GetValue(connectionString), result.GetValue(accountEndpoint), options, problems);

            if (problems.Count > 0)
            {
                foreach (var problem in problems)
                {
                    await error.WriteLineAsync($"seed: {problem}");
                }

                return 2;
            }

            return await SeedAsync(account!, options, output, error, cancellationToken);
        });
        return command;
    }

    /// <summary>How to reach the account: a key (connection string) or Entra ID (endpoint), exactly one.</summary>
    private static Func<CosmosClientOptions, CosmosClient>? Account(string? connectionString, string? accountEndpoint, SeedOptions options, List<string> problems)
    {
        var hasKey = !string.IsNullOrWhiteSpace(connectionString);
        var hasEndpoint = !string.IsNullOrWhiteSpace(accountEndpoint);
        if (hasKey && hasEndpoint)
        {
            problems.Add("Both a connection string and an account endpoint are set: choose the key (--connection-string) or Entra ID (--account-endpoint).");
            return null;
        }

        if (hasKey)
        {
            return clientOptions => new CosmosClient(connectionString, clientOptions);
        }

        if (!hasEndpoint)
        {
            problems.Add("No Cosmos DB account: pass --connection-string (or set Cosmos__ConnectionString) or --account-endpoint (or set Cosmos__AccountEndpoint).");
            return null;
        }

        if (!Uri.TryCreate(accountEndpoint, UriKind.Absolute, out var endpoint) || endpoint.Scheme != Uri.UriSchemeHttps)
        {
            problems.Add($"--account-endpoint must be an https address (was {accountEndpoint}).");
            return null;
        }

        if (!options.LoadOnly)
        {
            problems.Add("With Entra ID (--account-endpoint) add --load-only: data-plane roles cannot create containers or change throughput; the infrastructure sets those.");
        }

        return clientOptions => new CosmosClient(endpoint.AbsoluteUri, new DefaultAzureCredential(), clientOptions);
    }

    private static async Task<int> SeedAsync(Func<CosmosClientOptions, CosmosClient> account, SeedOptions options, TextWriter output, TextWriter error, CancellationToken cancellationToken)
    {
        using var client = account(new CosmosClientOptions
        {
            ConnectionMode = ConnectionMode.Gateway,
            LimitToEndpoint = true,
            UseSystemTextJsonSerializerWithOptions = CosmosClients.DocumentJson,

            // Loading at the case study's low RU/s is throttled by design: wait rather than fail.
            MaxRetryAttemptsOnRateLimitedRequests = 100,
            MaxRetryWaitTimeOnRateLimitedRequests = TimeSpan.FromMinutes(10),
            GatewayModeMaxConnectionLimit = Math.Max(50, options.Concurrency),

            // The upserts in flight go out as batches per partition range, a hundred operations per request
            // at most: loading is a bulk job, and one request per document spends client and service CPU on
            // HTTP rather than on the documents.
            AllowBulkExecution = true,
        });
        try
        {
            await new UtilizationSeeder(client, output).RunAsync(options, cancellationToken);
            return 0;
        }
        catch (Exception e) when (e is SeedException or CosmosException or HttpRequestException or AuthenticationFailedException)
        {
            await error.WriteLineAsync($"seed: {e.Message}");
            return 1;
        }
    }

    private static bool TryParseMonth(string? text, out BillingPeriod period)
    {
        period = default;
        if (DateTime.TryParseExact(text, "yyyy-MM", CultureInfo.InvariantCulture, DateTimeStyles.None, out var month)
            && month.Year is >= BillingPeriod.MinYear and <= BillingPeriod.MaxYear)
        {
            period = new BillingPeriod(month.Year, month.Month);
            return true;
        }

        return false;
    }
}
