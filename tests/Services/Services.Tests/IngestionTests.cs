using System.Diagnostics;
using System.Net;
using Azure.Messaging.ServiceBus;
using DroneDelivery.Contracts;
using DroneDelivery.ServiceClients.Messaging;
using DroneDelivery.Emulators.ServiceBus;
using DroneDelivery.Ingestion;
using DroneDelivery.LocalProcesses;
using DroneDelivery.Services.Tests.Infrastructure;
using DroneDelivery.TestSupport;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Time.Testing;
using static DroneDelivery.Services.Tests.Infrastructure.SystemHelpers;

namespace DroneDelivery.Services.Tests;

[Collection(SystemCollection.Name)]
public sealed class IngestionTests(SystemFixture system)
{
    [Fact]
    public async Task The_queued_message_carries_the_request_its_operation_and_the_trace_context()
    {
        await using var ingestion = await system.StartIngestionAsync("tracing");
        var request = NewRequest("owner-q", new DateTimeOffset(2025, 4, 4, 4, 0, 0, TimeSpan.Zero));

        var accepted = await ingestion.Client.PostJsonAsync("api/deliveryrequests", request);

        var id = (await accepted.ReadAsync<DeliveryRequestAccepted>()).DeliveryId;
        await using var receiver = system.Client.CreateReceiver("tracing", new ServiceBusReceiverOptions { ReceiveMode = ServiceBusReceiveMode.ReceiveAndDelete });
        var message = await receiver.ReceiveMessageAsync(Patience);
        Assert.NotNull(message);
        Assert.Equal((id, "application/json"), (message.MessageId, message.ContentType));
        Assert.Equal(DeliveryMessages.Delivery, message.ApplicationProperties[DeliveryMessages.OperationProperty]);
        Assert.Equal(id, message.ApplicationProperties[DeliveryMessages.DeliveryIdProperty]);
        Assert.True(ActivityContext.TryParse((string)message.ApplicationProperties[ServiceBusClientTelemetry.DiagnosticIdProperty], null, out _));
        var body = message.Body.ToObjectFromJson<DeliveryRequestMessage>(ContractJson.Options)!;
        Assert.Equal(id, body.DeliveryId);
        Assert.Equal(request with { }, new DeliveryRequest
        {
            OwnerId = body.OwnerId, PickupLocation = body.PickupLocation, DropoffLocation = body.DropoffLocation, PickupTime = body.PickupTime,
            Deadline = body.Deadline, Expedited = body.Expedited, ConfirmationRequired = body.ConfirmationRequired, PackageInfo = body.PackageInfo,
        });
    }

    [Fact]
    public async Task A_full_batch_is_sent_at_once_without_waiting_for_the_delay()
    {
        // The clock never moves, so no batch can be sent for its delay: only full batches go out.
        var time = new FakeTimeProvider();
        await using var ingestion = await StartIngestionAsync("batching", time, new() { ["Batching:MaxBatchSize"] = "5", ["Batching:MaxBatchDelay"] = "00:00:01" });
        using var metrics = new MetricRecorder(IngestionTelemetry.BatchSize, ServiceBusClientTelemetry.MessagesSent);

        var responses = await Task.WhenAll(Enumerable.Range(0, 10).Select(_ =>
            ingestion.Client.PostJsonAsync("api/deliveryrequests", NewRequest("owner-b", DateTimeOffset.UtcNow))));

        Assert.All(responses, r => Assert.Equal(HttpStatusCode.Accepted, r.StatusCode));
        var batches = await BatchesAsync(metrics, 2);
        Assert.Equal([5.0, 5.0], batches.Select(b => b.Value));
        Assert.All(batches, b => Assert.Equal("size", b.Tags["flush"]));
        Assert.Equal(10, metrics.Sum(ServiceBusClientTelemetry.MessagesSent, (ServiceBusClientTelemetry.DestinationTag, "batching")));
    }

    [Fact]
    public async Task A_batch_that_does_not_fill_waits_for_the_delay_then_is_sent()
    {
        var time = new FakeTimeProvider();
        var delay = TimeSpan.FromMilliseconds(300);
        await using var ingestion = await StartIngestionAsync("batching", time, new() { ["Batching:MaxBatchSize"] = "100", ["Batching:MaxBatchDelay"] = "00:00:00.300" });
        using var metrics = new MetricRecorder(IngestionTelemetry.BatchSize);
        var sender = ingestion.Services.GetRequiredService<BatchingSender>();

        var first = sender.SendAsync(new ServiceBusMessage("first"), CancellationToken.None);
        time.Advance(delay - TimeSpan.FromMilliseconds(1));
        // Handed over a millisecond before the first message's delay ends: if the first had not waited,
        // the second could not share its batch.
        var second = sender.SendAsync(new ServiceBusMessage("second"), CancellationToken.None);
        var both = Task.WhenAll(first, second);
        // The sender arms its timer a moment after it reads the clock, so time moves on in small steps
        // until the batch goes out.
        Assert.True(
            await Eventually.TrueAsync(() => { if (!both.IsCompleted) { time.Advance(TimeSpan.FromMilliseconds(1)); } return both.IsCompleted; }, Patience, TimeSpan.FromMilliseconds(10)),
            "The batch was never sent after its delay.");

        await both;
        var batch = Assert.Single(await BatchesAsync(metrics, 1));
        Assert.Equal((2.0, "delay"), (batch.Value, batch.Tags["flush"]));
    }

    [Fact]
    public async Task A_full_buffer_refuses_requests_with_503_and_retry_after()
    {
        await using var slowBus = await ServiceBusEmulator.StartAsync(new ServiceBusEmulatorOptions
        {
            Queues = [new QueueOptions { Name = "slow" }],
            SendLatency = TimeSpan.FromMilliseconds(500),
        });
        await using var ingestion = await ServiceApp.StartAsync(Definitions.Ingestion, new Dictionary<string, string?>
        {
            ["ServiceBus:ConnectionString"] = slowBus.ConnectionString,
            ["ServiceBus:QueueName"] = "slow",
            ["Batching:QueueCapacity"] = "2",
            ["Batching:MaxBatchSize"] = "1",
            ["Batching:MaxBatchDelay"] = "00:00:00",
        });

        var responses = await Task.WhenAll(Enumerable.Range(0, 12).Select(_ =>
            ingestion.Client.PostJsonAsync("api/deliveryrequests", NewRequest("owner-f", DateTimeOffset.UtcNow))));

        var refused = responses.Where(r => r.StatusCode == HttpStatusCode.ServiceUnavailable).ToList();
        Assert.NotEmpty(refused);
        Assert.Equal(12, refused.Count + responses.Count(r => r.StatusCode == HttpStatusCode.Accepted));
        Assert.All(refused, r => Assert.Equal(TimeSpan.FromSeconds(1), r.Headers.RetryAfter?.Delta));
        Assert.Equal("Ingestion is at capacity", (await refused[0].ProblemAsync()).GetProperty("title").GetString());
    }

    [Fact]
    public async Task An_unreachable_queue_makes_a_503_never_a_202_and_the_service_not_ready()
    {
        await using var ingestion = await ServiceApp.StartAsync(Definitions.Ingestion, new Dictionary<string, string?>
        {
            ["ServiceBus:ConnectionString"] = $"Endpoint=sb://127.0.0.1:{FreePort.Next()};SharedAccessKeyName=k;SharedAccessKey=v;UseDevelopmentEmulator=true",
        });

        var post = ingestion.Client.PostJsonAsync("api/deliveryrequests", NewRequest("owner-u", DateTimeOffset.UtcNow));
        var probe = ingestion.Client.GetAsync("health/ready");
        var (response, ready) = (await post, await probe);

        Assert.Equal(HttpStatusCode.ServiceUnavailable, response.StatusCode);
        Assert.Equal("The request could not be queued", (await response.ProblemAsync()).GetProperty("title").GetString());
        Assert.Equal(HttpStatusCode.ServiceUnavailable, ready.StatusCode);
    }

    [Fact]
    public async Task Becomes_ready_once_a_namespace_that_was_down_at_start_comes_up()
    {
        // On a cluster the pods start in any order: an Ingestion pod that started before the
        // namespace answered must not stay unready.
        var port = FreePort.Next();
        await using var ingestion = await ServiceApp.StartAsync(Definitions.Ingestion, new Dictionary<string, string?>
        {
            ["ServiceBus:ConnectionString"] = $"Endpoint=sb://127.0.0.1:{port};SharedAccessKeyName={ServiceBusEmulatorOptions.DefaultKeyName};SharedAccessKey={ServiceBusEmulatorOptions.DevelopmentKey};UseDevelopmentEmulator=true",
            ["ServiceBus:QueueName"] = "late",
        });
        Assert.Equal(HttpStatusCode.ServiceUnavailable, (await ingestion.Client.GetAsync("health/ready")).StatusCode);

        await using var emulator = await ServiceBusEmulator.StartAsync(new ServiceBusEmulatorOptions
        {
            Port = port,
            Queues = [new QueueOptions { Name = "late" }],
        });

        Assert.True(
            await Eventually.TrueAsync(async () => (await ingestion.Client.GetAsync("health/ready")).StatusCode == HttpStatusCode.OK, TimeSpan.FromSeconds(60), TimeSpan.FromMilliseconds(200)),
            "Ingestion never became ready after the namespace came up.");
        var accepted = await ingestion.Client.PostJsonAsync("api/deliveryrequests", NewRequest("owner-late", DateTimeOffset.UtcNow));
        Assert.Equal(HttpStatusCode.Accepted, accepted.StatusCode);
    }

    [Fact]
    public async Task The_location_is_absolute_under_the_configured_status_address()
    {
        await using var ingestion = await system.StartIngestionAsync("tracing", new() { ["Ingestion:DeliveryStatusBaseAddress"] = "https://drones.example/delivery" });

        var accepted = await ingestion.Client.PostJsonAsync("api/deliveryrequests", NewRequest("owner-l", DateTimeOffset.UtcNow));

        var id = (await accepted.ReadAsync<DeliveryRequestAccepted>()).DeliveryId;
        Assert.Equal(new Uri($"https://drones.example/delivery/api/deliveries/{id}/status"), accepted.Headers.Location);
    }

    [Fact]
    public async Task Invalid_or_missing_fields_are_listed_in_one_400()
    {
        var response = await system.Ingestion.Client.PostJsonAsync("api/deliveryrequests", new DeliveryRequest
        {
            OwnerId = "owner 1",
            PickupLocation = "47.64,-122.13",
            DropoffLocation = "200,0",
            PickupTime = new DateTimeOffset(2025, 1, 2, 0, 0, 0, TimeSpan.Zero),
            Deadline = new DateTimeOffset(2025, 1, 1, 0, 0, 0, TimeSpan.Zero),
            PackageInfo = new PackageInfo { Size = PackageSize.Large, Weight = 0 },
        });

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        Assert.Equal(["deadline", "dropoffLocation", "ownerId", "packageInfo.packageId", "packageInfo.weight"], await response.InvalidFieldsAsync());
    }

    [Theory]
    [InlineData("""{"ownerId":"o","packageInfo":{"size":"Huge"}}""")]
    [InlineData("""{"ownerId":"o","confirmationRequired":"Retina"}""")]
    [InlineData("""{"ownerId":"o","pickupTime":"yesterday"}""")]
    [InlineData("""[1, 2, 3]""")]
    public async Task Unreadable_json_is_a_400(string json)
    {
        var response = await system.Ingestion.Client.SendRawAsync(HttpMethod.Post, "api/deliveryrequests", json);

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
        await response.ProblemAsync();
    }

    [Fact]
    public async Task A_missing_body_is_a_400()
    {
        var response = await system.Ingestion.Client.PostAsync("api/deliveryrequests", new StringContent("", System.Text.Encoding.UTF8, "application/json"));

        Assert.Equal(HttpStatusCode.BadRequest, response.StatusCode);
    }

    [Fact]
    public async Task A_reschedule_without_changes_or_with_a_bad_id_is_a_400()
    {
        var empty = await system.Ingestion.Client.PatchJsonAsync("api/deliveryrequests/d-1", new RescheduleRequest());
        var badTimes = await system.Ingestion.Client.PatchJsonAsync("api/deliveryrequests/d-1", new RescheduleRequest
        {
            PickupTime = new DateTimeOffset(2025, 1, 2, 0, 0, 0, TimeSpan.Zero),
            Deadline = new DateTimeOffset(2025, 1, 1, 0, 0, 0, TimeSpan.Zero),
        });
        var badId = await system.Ingestion.Client.DeleteAsync("api/deliveryrequests/" + new string('x', 70));

        Assert.Equal(["body"], await empty.InvalidFieldsAsync());
        Assert.Equal(["deadline"], await badTimes.InvalidFieldsAsync());
        Assert.Equal(["id"], await badId.InvalidFieldsAsync());
    }

    [Fact]
    public async Task An_oversized_body_is_refused_with_413()
    {
        var huge = "{\"ownerId\": \"" + new string('x', 2 * 1024 * 1024) + "\"}";

        var response = await system.Ingestion.Client.SendOversizedAsync(HttpMethod.Post, "api/deliveryrequests", huge);

        Assert.Equal(HttpStatusCode.RequestEntityTooLarge, response.StatusCode);
    }

    [Theory]
    [InlineData("Batching:MaxBatchSize", "0", "Setting 'Batching:MaxBatchSize' = '0' is invalid")]
    [InlineData("Batching:MaxBatchDelay", "00:00:05", "Setting 'Batching:MaxBatchDelay' = '00:00:05' is invalid")]
    [InlineData("Batching:QueueCapacity", "0", "Setting 'Batching:QueueCapacity' = '0' is invalid")]
    [InlineData("Ingestion:DeliveryStatusBaseAddress", "/status", "Setting 'Ingestion:DeliveryStatusBaseAddress'")]
    [InlineData("ServiceBus:QueueName", "bad queue", "Setting 'ServiceBus:QueueName' = 'bad queue' is invalid")]
    [InlineData("ServiceBus:ConnectionString", null, "Exactly one of ConnectionString (shared access key) and FullyQualifiedNamespace")]
    public Task Ingestion_refuses_a_bad_setting(string key, string? value, string expected) =>
        SettingsTests.AssertRefusedAsync(Definitions.Ingestion, new()
        {
            ["ServiceBus:ConnectionString"] = system.ServiceBus.ConnectionString,
            [key] = value,
        }, expected);

    /// <summary>Ingestion on the shared Service Bus emulator with <paramref name="time"/> as its clock.</summary>
    private async Task<ServiceApp> StartIngestionAsync(string queue, TimeProvider time, Dictionary<string, string?> settings)
    {
        settings["ServiceBus:ConnectionString"] = system.ServiceBus.ConnectionString;
        settings["ServiceBus:QueueName"] = queue;
        return await ServiceApp.StartAsync(Definitions.Ingestion, settings, services => services.AddSingleton(time));
    }

    /// <summary>The batches sent to the <c>batching</c> queue, once <paramref name="count"/> have been recorded (a send is recorded just after its callers are answered).</summary>
    private static async Task<List<MetricRecorder.Measurement>> BatchesAsync(MetricRecorder metrics, int count)
    {
        List<MetricRecorder.Measurement> Batches() => metrics.Of(IngestionTelemetry.BatchSize, ("messaging.destination.name", "batching")).ToList();
        Assert.True(await Eventually.TrueAsync(() => Batches().Count >= count, Patience), $"Only {Batches().Count} of {count} batches were recorded.");
        return Batches();
    }
}
