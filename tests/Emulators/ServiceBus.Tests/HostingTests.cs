using System.Net.Sockets;
using System.Text.Json;
using Azure.Messaging.ServiceBus;
using DroneDelivery.Emulators.ServiceBus.Metrics;
using DroneDelivery.Lab.Measurement;
using DroneDelivery.LocalProcesses;
using DroneDelivery.TestSupport;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

public sealed class HostingTests
{
    private const string ConfigJson = """
        {
          // The official emulator's shape; comments and trailing commas are allowed.
          "UserConfig": {
            "Namespaces": [ {
              "Name": "sbemulatorns",
              "Queues": [ { "Name": "deliveries", "Properties": { "LockDuration": "PT5S", "MaxDeliveryCount": 2, "DefaultMessageTimeToLive": "PT1H", } } ],
              "Topics": []
            } ],
            "Logging": { "Type": "Console" }
          },
          "Emulator": { "SharedAccessKeyName": "LabKey", "SharedAccessKey": "lab-secret" }
        }
        """;

    [Fact]
    public async Task Emulator_started_as_a_process_prints_its_ready_line_and_serves_clients_and_metrics()
    {
        var config = Path.Combine(Path.GetTempPath(), $"sb-config-{Guid.NewGuid():N}.json");
        await File.WriteAllTextAsync(config, ConfigJson);
        var port = FreePort.Next();
        var httpPort = FreePort.Next();
        try
        {
            await using var process = await LocalProcess.StartAsync(
                LocalProcessSpec.ForProject("servicebus-emulator", "DroneDelivery.Emulators.ServiceBus", "--port", port.ToString(System.Globalization.CultureInfo.InvariantCulture), "--http-port", httpPort.ToString(System.Globalization.CultureInfo.InvariantCulture), "--config", config)
                    with { IsReadyLine = line => line.StartsWith(ServiceBusEmulator.ReadyLinePrefix, StringComparison.Ordinal) });
            var connection = $"Endpoint=sb://127.0.0.1:{port};SharedAccessKeyName=LabKey;SharedAccessKey=lab-secret;UseDevelopmentEmulator=true";
            await using var client = new ServiceBusClient(connection, EmulatorScope.Fast());
            await using var sender = client.CreateSender("deliveries");
            await using var receiver = client.CreateReceiver("deliveries");

            await sender.SendMessageAsync(new ServiceBusMessage("over a process"));
            var received = await receiver.ReceiveMessageAsync(TimeSpan.FromSeconds(30));
            await receiver.CompleteMessageAsync(received!);
            using var http = new HttpClient { BaseAddress = new Uri($"http://127.0.0.1:{httpPort}") };
            var health = await http.GetAsync(EmulatorMetricNames.HealthPath);
            var prometheus = PrometheusText.Parse(await http.GetStringAsync(EmulatorMetricNames.PrometheusPath));
            var text = await http.GetStringAsync(EmulatorMetricNames.JsonPath);
            using var json = JsonDocument.Parse(text);
            var typed = JsonSerializer.Deserialize<EmulatorMetricsSnapshot>(text, new JsonSerializerOptions(JsonSerializerDefaults.Web))!;

            Assert.Contains(process.RecentOutput, l => l.Contains($"amqp=127.0.0.1:{port}", StringComparison.Ordinal));
            Assert.Equal("over a process", received!.Body.ToString());
            Assert.True(health.IsSuccessStatusCode);
            Assert.Equal(1, prometheus.Of(EmulatorMetricNames.CompletedMessages, "deliveries"));
            Assert.Equal(1, prometheus.Of(EmulatorMetricNames.IncomingMessages, "deliveries"));
            var queue = json.RootElement.GetProperty("queues")[0];
            Assert.Equal("deliveries", queue.GetProperty("queue").GetString());
            Assert.Equal(1, queue.GetProperty("counters").GetProperty("completed").GetInt64());
            Assert.Equal(1, queue.GetProperty("counters").GetProperty("outgoingDeliveries").GetInt64());
            Assert.Equal(1, typed["deliveries"].Counters.Completed);
            Assert.Equal(0, typed["deliveries"].ActiveMessages);
        }
        finally
        {
            File.Delete(config);
        }
    }

    [Fact]
    public async Task Emulator_process_stops_at_once_on_SIGTERM_with_clients_connected()
    {
        var config = Path.Combine(Path.GetTempPath(), $"sb-config-{Guid.NewGuid():N}.json");
        await File.WriteAllTextAsync(config, ConfigJson);
        var port = FreePort.Next();
        try
        {
            await using var process = await LocalProcess.StartAsync(
                LocalProcessSpec.ForProject("servicebus-emulator", "DroneDelivery.Emulators.ServiceBus", "--port", port.ToString(System.Globalization.CultureInfo.InvariantCulture), "--http-port", FreePort.Next().ToString(System.Globalization.CultureInfo.InvariantCulture), "--config", config)
                    with { IsReadyLine = line => line.StartsWith(ServiceBusEmulator.ReadyLinePrefix, StringComparison.Ordinal) });
            var connection = $"Endpoint=sb://127.0.0.1:{port};SharedAccessKeyName=LabKey;SharedAccessKey=lab-secret;UseDevelopmentEmulator=true";
            await using var client = new ServiceBusClient(connection, EmulatorScope.Fast());
            await using var sender = client.CreateSender("deliveries");
            await sender.SendMessageAsync(new ServiceBusMessage("pending"));

            // What Kubernetes and the lab send; the emulator must not wait for its clients to leave.
            using (var kill = System.Diagnostics.Process.Start("kill", ["-TERM", process.ProcessId.ToString(System.Globalization.CultureInfo.InvariantCulture)]))
            {
                await kill.WaitForExitAsync();
            }

            // Connected clients would hold it forever; the bound only keeps a failure from hanging the suite.
            var exited = await Task.WhenAny(process.Exited, Task.Delay(TimeSpan.FromSeconds(30)));
            Assert.True(exited == process.Exited, "the emulator was still running 30 s after SIGTERM");
            Assert.Equal(0, await process.Exited);
        }
        finally
        {
            File.Delete(config);
        }
    }

    [Fact]
    public async Task Emulator_process_with_a_bad_config_entry_exits_naming_it()
    {
        var config = Path.Combine(Path.GetTempPath(), $"sb-config-{Guid.NewGuid():N}.json");
        await File.WriteAllTextAsync(config, ConfigJson.Replace("\"MaxDeliveryCount\": 2", "\"MaxDeliveryCount\": 0", StringComparison.Ordinal));
        try
        {
            var error = await Assert.ThrowsAsync<InvalidOperationException>(() => LocalProcess.StartAsync(
                LocalProcessSpec.ForProject("servicebus-emulator", "DroneDelivery.Emulators.ServiceBus", "--port", "0", "--config", config)
                    with { IsReadyLine = line => line.StartsWith(ServiceBusEmulator.ReadyLinePrefix, StringComparison.Ordinal), ReadyTimeout = TimeSpan.FromSeconds(30) }));

            Assert.Contains("MaxDeliveryCount must be 1..2000", error.Message, StringComparison.Ordinal);
            Assert.Contains("deliveries", error.Message, StringComparison.Ordinal);
        }
        finally
        {
            File.Delete(config);
        }
    }

    [Theory]
    [InlineData("\"LockDuration\": \"PT5S\"", "\"LockDuration\": \"five seconds\"", "LockDuration must be an ISO-8601 duration")]
    [InlineData("\"LockDuration\": \"PT5S\"", "\"LockDuration\": \"PT10M\"", "LockDuration must be 1 s..5 min")]
    [InlineData("\"Topics\": []", "\"Topics\": [ { \"Name\": \"t\", \"Subscriptions\": [ { \"Name\": \"s\", \"Rules\": [ { \"Name\": \"r\", \"Properties\": { \"FilterType\": \"Sql\", \"SqlFilter\": { \"SqlExpression\": \"a LIKE 5\" } } } ] } ] } ]", "Subscription 't/Subscriptions/s', rule 'r': SQL filter \"a LIKE 5\" is not supported at position 7")]
    [InlineData("\"Topics\": []", "\"Topics\": [ { \"Name\": \"t\", \"Subscriptions\": [ { \"Name\": \"s\" }, { \"Name\": \"s\" } ] } ]", "Topic 't': subscription 's' is defined twice")]
    [InlineData("\"Name\": \"deliveries\"", "\"Name\": \"bad name!\"", "Queue name 'bad name!' is invalid")]
    public void Config_file_errors_name_the_bad_entry(string original, string replacement, string expected)
    {
        var config = Path.Combine(Path.GetTempPath(), $"sb-config-{Guid.NewGuid():N}.json");
        File.WriteAllText(config, ConfigJson.Replace(original, replacement, StringComparison.Ordinal));
        try
        {
            var error = Assert.Throws<EmulatorConfigurationException>(() => ServiceBusEmulatorOptions.LoadConfigFile(config).Validate());

            Assert.Contains(expected, error.Message, StringComparison.Ordinal);
        }
        finally
        {
            File.Delete(config);
        }
    }

    [Fact]
    public void Config_file_binds_queue_properties_and_the_key()
    {
        var config = Path.Combine(Path.GetTempPath(), $"sb-config-{Guid.NewGuid():N}.json");
        File.WriteAllText(config, ConfigJson);
        try
        {
            var options = ServiceBusEmulatorOptions.LoadConfigFile(config);

            var queue = Assert.Single(options.Queues);
            Assert.Equal("deliveries", queue.Name);
            Assert.Equal(TimeSpan.FromSeconds(5), queue.LockDuration);
            Assert.Equal(2, queue.MaxDeliveryCount);
            Assert.Equal(TimeSpan.FromHours(1), queue.DefaultMessageTimeToLive);
            Assert.Equal("LabKey", options.SharedAccessKeyName);
            Assert.Equal("lab-secret", options.SharedAccessKey);
        }
        finally
        {
            File.Delete(config);
        }
    }

    [Fact]
    public async Task Garbage_on_one_connection_closes_only_that_connection()
    {
        await using var scope = await EmulatorScope.StartAsync();
        var failures = new System.Collections.Concurrent.ConcurrentQueue<string>();
        scope.Emulator.ConnectionFailed += failures.Enqueue;
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await sender.SendMessageAsync(new ServiceBusMessage("before"));

        using (var raw = new TcpClient())
        {
            await raw.ConnectAsync("127.0.0.1", scope.Emulator.AmqpEndPoint.Port);
            var stream = raw.GetStream();
            // A valid AMQP header, then a frame whose body is not a performative.
            await stream.WriteAsync("AMQP\0\u0001\0\0"u8.ToArray());
            await stream.WriteAsync(new byte[] { 0, 0, 0, 12, 2, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef });
            var buffer = new byte[1024];
            var read = 0;
            using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(30));
            while (true)
            {
                var n = await stream.ReadAsync(buffer.AsMemory(read), timeout.Token);
                if (n == 0)
                {
                    break;
                }

                read += n;
            }

            Assert.True(read >= 8, "the broker answers with its header and a close before hanging up");
        }

        await sender.SendMessageAsync(new ServiceBusMessage("after"));
        await using var receiver = scope.Client.CreateReceiver(EmulatorScope.Queue);
        var messages = new List<string>();
        while (messages.Count < 2)
        {
            messages.AddRange((await receiver.ReceiveMessagesAsync(2, TimeSpan.FromSeconds(30))).Select(m => m.Body.ToString()));
        }

        Assert.Equal(["before", "after"], messages);
        Assert.True(await Eventually.TrueAsync(() => scope.Emulator.ConnectionCount == 1, TimeSpan.FromSeconds(30)));
        Assert.Contains(failures, f => f.Contains("amqp:decode-error", StringComparison.Ordinal));
    }

    [Fact]
    public async Task Per_second_series_records_what_happened_each_second()
    {
        await using var scope = await EmulatorScope.StartAsync();
        await using var sender = scope.Client.CreateSender(EmulatorScope.Queue);
        await sender.SendMessagesAsync(Enumerable.Range(0, 10).Select(_ => new ServiceBusMessage("x")));

        Assert.True(await Eventually.TrueAsync(() => scope.Metrics.Series.Sum(s => s.Delta.IncomingMessages) == 10, TimeSpan.FromSeconds(30)));
        Assert.Equal(10, scope.Metrics.Series[^1].ActiveMessages);
    }
}
