using System.Diagnostics;
using System.Net;
using System.Text;
using System.Text.Json;
using Azure.Messaging.ServiceBus;
using DroneDelivery.Emulators.ServiceBus.Faults;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>The round trips the emulator adds, replaced at run time over <c>/_emulator/latency</c>.</summary>
public sealed class LatencyEndpointTests
{
    private const string Queue = EmulatorScope.Queue;

    [Fact]
    public async Task The_latency_endpoint_replaces_the_round_trips_for_the_operations_that_follow()
    {
        await using var scope = await EmulatorScope.StartAsync(emulator: o => o with { HttpPort = 0 });
        using var http = new HttpClient { BaseAddress = scope.Emulator.HttpEndpoint };
        var admin = new ServiceBusFaultClient(http, scope.Emulator.Options.SharedAccessKeyName, scope.Emulator.Options.SharedAccessKey);
        await using var sender = scope.Client.CreateSender(Queue);
        await sender.SendMessageAsync(new ServiceBusMessage("before"));

        var set = await admin.SetLatencyAsync(new ServiceBusLatencyState(SendMilliseconds: 300, ReceiveMilliseconds: 0, CompleteMilliseconds: 0));
        var clock = Stopwatch.StartNew();
        await sender.SendMessageAsync(new ServiceBusMessage("after"));

        // A lower bound only: a busy machine may take longer, never shorter.
        Assert.True(clock.Elapsed >= TimeSpan.FromMilliseconds(300), $"took {clock.Elapsed.TotalMilliseconds:0} ms");
        Assert.Equal(new ServiceBusLatencyState(300, 0, 0), set);
        Assert.Equal(TimeSpan.FromMilliseconds(300), scope.Emulator.Latency.Send);
        using var read = JsonDocument.Parse(await http.GetStringAsync("_emulator/latency"));
        Assert.Equal(300, read.RootElement.GetProperty("sendMilliseconds").GetDouble());
    }

    [Theory]
    [InlineData(true, """{"sendMilliseconds": -1}""", HttpStatusCode.BadRequest, "sendMilliseconds must be between 0 and 30000")]
    [InlineData(true, """{"completeMilliseconds": 30001}""", HttpStatusCode.BadRequest, "completeMilliseconds must be between 0 and 30000")]
    [InlineData(true, """{"sendMs": 5}""", HttpStatusCode.BadRequest, "The body must be")]
    [InlineData(true, """null""", HttpStatusCode.BadRequest, "The body must be")]
    [InlineData(false, """{"sendMilliseconds": 5}""", HttpStatusCode.Unauthorized, "Changing the latency needs")]
    public async Task A_change_without_a_signature_or_with_a_bad_value_is_refused_and_changes_nothing(bool signed, string body, HttpStatusCode status, string message)
    {
        await using var scope = await EmulatorScope.StartAsync(emulator: o => o with { HttpPort = 0, SendLatency = TimeSpan.FromMilliseconds(2) });
        using var http = new HttpClient { BaseAddress = scope.Emulator.HttpEndpoint };
        using var request = new HttpRequestMessage(HttpMethod.Put, "_emulator/latency") { Content = new StringContent(body, Encoding.UTF8, "application/json") };
        if (signed)
        {
            request.Headers.TryAddWithoutValidation("Authorization", Broker.SharedAccessSignature.Create("emulator", scope.Emulator.Options.SharedAccessKeyName, scope.Emulator.Options.SharedAccessKey, TimeSpan.FromMinutes(5)).ToString());
        }

        using var response = await http.SendAsync(request);

        Assert.Equal(status, response.StatusCode);
        Assert.Contains(message, await response.Content.ReadAsStringAsync(), StringComparison.Ordinal);
        Assert.Equal(TimeSpan.FromMilliseconds(2), scope.Emulator.Latency.Send);
    }
}
