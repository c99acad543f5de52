using DroneDelivery.LocalProcesses;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>
/// The command-line contract other tools rely on: <c>--port &lt;port&gt; [--host &lt;address&gt;] [--config &lt;file&gt;] [--https]</c>,
/// one ready line, and a fast failure that names a bad setting.
/// </summary>
public sealed class StartupTests : IDisposable
{
    private const string Project = "DroneDelivery.Emulators.CosmosDb";
    private readonly string _directory = Directory.CreateTempSubdirectory("cosmos-emulator-").FullName;

    public void Dispose() => Directory.Delete(_directory, recursive: true);

    [Fact]
    public async Task Without_config_it_serves_an_empty_account_over_http_with_the_well_known_key()
    {
        var port = FreePort.Next();
        await using var process = await StartAsync("--port", port.ToString());
        using var client = Client($"http://127.0.0.1:{port}/");

        var databases = await client.GetDatabaseQueryIterator<DatabaseProperties>().ToListAsync();
        using var http = new HttpClient();
        var health = await http.GetAsync($"http://127.0.0.1:{port}/_emulator/health");

        Assert.Empty(databases);
        Assert.True(health.IsSuccessStatusCode);
        Assert.Contains(process.RecentOutput, line => line == $"Cosmos DB emulator ready on http://127.0.0.1:{port}/");
    }

    [Fact]
    public async Task Config_file_declares_containers_with_their_capacity_model()
    {
        var config = Write("config.json", """
            {
              // Scenario A, step 1
              "Latency": { "FixedMilliseconds": 1 },
              "Databases": [
                { "Id": "invoicing", "Containers": [
                  { "Id": "utilization", "PartitionKeyPath": "/partitionKey", "Throughput": 900, "PhysicalPartitions": 9 },
                ] }
              ]
            }
            """);
        var port = FreePort.Next();
        await using var process = await StartAsync("--port", port.ToString(), "--config", config);
        using var client = Client($"http://127.0.0.1:{port}/");

        var container = client.GetContainer("invoicing", "utilization");
        var properties = (await container.ReadContainerAsync()).Resource;

        Assert.Equal("/partitionKey", properties.PartitionKeyPath);
        Assert.Equal(900, await container.ReadThroughputAsync());
        Assert.Equal(9, (await container.GetFeedRangesAsync()).Count);
    }

    [Fact]
    public async Task Https_flag_serves_tls()
    {
        var port = FreePort.Next();
        await using var process = await StartAsync("--port", port.ToString(), "--https");
        using var client = new CosmosClient(
            $"AccountEndpoint=https://127.0.0.1:{port}/;AccountKey={Configuration.CosmosEmulatorOptions.WellKnownAccountKey};DisableServerCertificateValidation=True;",
            new CosmosClientOptions { ConnectionMode = ConnectionMode.Gateway, LimitToEndpoint = true });

        var database = await client.CreateDatabaseIfNotExistsAsync("db");

        Assert.Equal(System.Net.HttpStatusCode.Created, database.StatusCode);
    }

    [Fact]
    public async Task Host_option_listens_on_all_interfaces_for_pods()
    {
        var port = FreePort.Next();
        await using var process = await StartAsync("--port", port.ToString(), "--host", "0.0.0.0");
        using var client = Client($"http://127.0.0.1:{port}/");

        var database = await client.CreateDatabaseIfNotExistsAsync("db");

        Assert.Equal(System.Net.HttpStatusCode.Created, database.StatusCode);
        Assert.Contains(process.RecentOutput, line => line == $"Cosmos DB emulator ready on http://127.0.0.1:{port}/");
    }

    [Fact]
    public async Task Bad_host_fails_fast()
    {
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => StartAsync("--port", "0", "--host", "everywhere"));

        Assert.Contains("exited with code 2", error.Message);
        Assert.Contains("--host", error.Message);
    }

    [Theory]
    [InlineData("""{ "Databases": [ { "Id": "db", "Containers": [ { "Id": "c", "PartitionKeyPath": "/pk", "Throughput": 0 } ] } ] }""", "Databases[0].Containers[0].Throughput")]
    [InlineData("""{ "Databases": [ { "Id": "db", "Containers": [ { "Id": "c", "PartitionKeyPath": "pk" } ] } ] }""", "PartitionKeyPath")]
    [InlineData("""{ "Latency": { "FixedMiliseconds": 2 } }""", "FixedMiliseconds")]
    [InlineData("""{ "Databases": [ """, "not valid")]
    public async Task Bad_config_fails_fast_naming_the_setting(string json, string named)
    {
        var config = Write("bad.json", json);

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => StartAsync("--port", FreePort.Next().ToString(), "--config", config));

        Assert.Contains("exited with code 2", error.Message);
        Assert.Contains(named, error.Message);
    }

    [Fact]
    public async Task Unknown_option_fails_fast()
    {
        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => StartAsync("--port", "0", "--partitions", "9"));

        Assert.Contains("exited with code 2", error.Message);
        Assert.Contains("Unknown option '--partitions'", error.Message);
    }

    private static Task<LocalProcess> StartAsync(params string[] arguments)
    {
        var spec = LocalProcessSpec.ForProject("cosmos-emulator", Project, arguments) with
        {
            IsReadyLine = line => line.StartsWith("Cosmos DB emulator ready on ", StringComparison.Ordinal),
            ReadyTimeout = TimeSpan.FromSeconds(30),
        };
        return LocalProcess.StartAsync(spec);
    }

    private static CosmosClient Client(string endpoint) =>
        new(endpoint, Configuration.CosmosEmulatorOptions.WellKnownAccountKey, new CosmosClientOptions
        {
            ConnectionMode = ConnectionMode.Gateway,
            LimitToEndpoint = true,
        });

    private string Write(string name, string content)
    {
        var path = Path.Combine(_directory, name);
        File.WriteAllText(path, content);
        return path;
    }
}
