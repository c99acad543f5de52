using System.Net;
using Azure.Messaging.ServiceBus;
using DroneDelivery.Contracts;
using DroneDelivery.ServiceClients.Cosmos;
using DroneDelivery.ServiceClients.Messaging;
using DroneDelivery.Ingestion;
using DroneDelivery.Services.Tests.Infrastructure;
using DroneDelivery.TestSupport;
using DroneDelivery.Workflow;
using Microsoft.AspNetCore.Http;
using Microsoft.Azure.Cosmos;
using Microsoft.Extensions.DependencyInjection;
using static DroneDelivery.Services.Tests.Infrastructure.SystemHelpers;

namespace DroneDelivery.Services.Tests;

/// <summary>The Workflow's behaviour on redelivery and failure, each test with a Workflow on a queue of its own.</summary>
[Collection(SystemCollection.Name)]
public sealed class WorkflowTests(SystemFixture system)
{
    [Fact]
    public async Task A_message_redelivered_after_all_its_steps_ran_creates_nothing_twice()
    {
        // Delivery stores the first PUT but its answer is lost (503): a retry of the message is scheduled.
        var puts = 0;
        await using var proxy = await StartProxyAsync(system.Delivery.BaseAddress, context =>
        {
            if (context.Request.Method == "PUT" && Interlocked.Increment(ref puts) == 1)
            {
                // Forwarded first, then answered as failed.
                return new ForwardThenFail(system.Delivery.BaseAddress);
            }

            return null;
        });
        await using var workflow = await system.StartWorkflowAsync("transient", new()
        {
            ["Backends:Delivery:BaseAddress"] = proxy.BaseAddress.ToString(),
            ["Resilience:MaxRetryAttempts"] = "0",
        });
        var before = Counters("transient");
        var owner = NewId();
        var request = NewRequest(owner, new DateTimeOffset(2025, 11, 3, 8, 0, 0, TimeSpan.Zero));
        var id = NewId();

        await system.Client.SendAsync("transient", DeliveryRequestMessages.Delivery(id, request.Valid()));

        await system.Delivery.WaitForStatusAsync(id, _ => true);
        Assert.True(await Eventually.TrueAsync(() => Counters("transient").Completed - before.Completed == 2, Patience));
        var counters = Counters("transient").Minus(before);
        Assert.Equal((0, 2, 2), (counters.Abandoned, counters.Completed, counters.OutgoingDeliveries));
        await AssertCreatedOnceAsync(id, owner, request, 2025, 11);
    }

    [Fact]
    public async Task A_duplicate_message_creates_nothing_twice()
    {
        await using var workflow = await system.StartWorkflowAsync("redelivery");
        var before = Counters("redelivery");
        var owner = NewId();
        var request = NewRequest(owner, new DateTimeOffset(2025, 12, 5, 8, 0, 0, TimeSpan.Zero));
        var id = NewId();

        await system.Client.SendAsync("redelivery", DeliveryRequestMessages.Delivery(id, request.Valid()));
        await system.Client.SendAsync("redelivery", DeliveryRequestMessages.Delivery(id, request.Valid()));

        Assert.True(await Eventually.TrueAsync(() => Counters("redelivery").Completed - before.Completed == 2, Patience));
        await AssertCreatedOnceAsync(id, owner, request, 2025, 12);
    }

    [Fact]
    public async Task A_permanent_failure_after_partial_progress_is_compensated_then_dead_lettered_with_its_reason()
    {
        await using var workflow = await system.StartWorkflowAsync("permanent");
        using var metrics = new MetricRecorder(WorkflowTelemetry.Messages);
        var id = NewId();
        var request = NewRequest(NewId(), new DateTimeOffset(2025, 7, 7, 7, 0, 0, TimeSpan.Zero));

        // A delivery cancelled before it was scheduled: Delivery refuses it with 409 after the package and drone exist.
        await system.Delivery.Client.PutJsonAsync($"api/deliveries/{id}", new DeliverySchedule
        {
            OwnerId = request.OwnerId, PickupLocation = request.PickupLocation, DropoffLocation = request.DropoffLocation,
            PickupTime = request.PickupTime, Deadline = request.Deadline, PackageId = request.PackageInfo!.PackageId, DroneId = "drone-0001",
        });
        await system.Delivery.Client.DeleteAsync($"api/deliveries/{id}");

        var before = Counters("permanent");

        await system.Client.SendAsync("permanent", DeliveryRequestMessages.Delivery(id, request.Valid()));

        Assert.True(await Eventually.TrueAsync(() => Counters("permanent").DeadLettered > before.DeadLettered, Patience));
        Assert.Equal(1, Counters("permanent").OutgoingDeliveries - before.OutgoingDeliveries);
        var dead = await system.Client.ReceiveDeadLetterAsync("permanent");
        Assert.Equal(id, dead.MessageId);
        Assert.Equal(DeliveryWorkflow.Reasons.BackendRejected, dead.DeadLetterReason);
        Assert.Contains("delivery: Rejected (HTTP 409)", dead.DeadLetterErrorDescription);
        Assert.Equal(HttpStatusCode.NotFound, (await system.Package.Client.GetAsync($"api/packages/{request.PackageInfo.PackageId}")).StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, (await system.DroneScheduler.Client.GetAsync($"api/dronedeliveries/{id}")).StatusCode);
        Assert.Equal(1, metrics.Sum(WorkflowTelemetry.Messages, ("operation", "delivery"), ("outcome", WorkflowTelemetry.Outcomes.Compensated)));
    }

    [Fact]
    public async Task Transient_failures_past_the_budget_are_compensated_then_dead_lettered()
    {
        var puts = 0;
        await using var failingDelivery = await StartProxyAsync(system.Delivery.BaseAddress, context => context.Request.Method switch
        {
            "PUT" => Increment(ref puts, Results.StatusCode(StatusCodes.Status503ServiceUnavailable)),
            _ => Results.Problem(statusCode: 404),
        });
        await using var workflow = await system.StartWorkflowAsync("exhausted", new()
        {
            ["Backends:Delivery:BaseAddress"] = failingDelivery.BaseAddress.ToString(),
            ["Resilience:MaxRetryAttempts"] = "0",
            ["Redelivery:TransientBudget"] = "00:00:00",
        });
        var id = NewId();
        var request = NewRequest(NewId(), DateTimeOffset.UtcNow);

        var before = Counters("exhausted");

        await system.Client.SendAsync("exhausted", DeliveryRequestMessages.Delivery(id, request.Valid()));

        Assert.True(await Eventually.TrueAsync(() => Counters("exhausted").DeadLettered > before.DeadLettered, Patience));
        var counters = Counters("exhausted").Minus(before);
        var dead = await system.Client.ReceiveDeadLetterAsync("exhausted");
        Assert.Equal(DeliveryWorkflow.Reasons.TransientFailuresExhausted, dead.DeadLetterReason);
        Assert.Contains("delivery: Failed (HTTP 503)", dead.DeadLetterErrorDescription);
        Assert.Equal((1, 0), (counters.OutgoingDeliveries, counters.Abandoned));
        Assert.Equal(1, puts);
        Assert.Equal(HttpStatusCode.NotFound, (await system.Package.Client.GetAsync($"api/packages/{request.PackageInfo!.PackageId}")).StatusCode);
        Assert.Equal(HttpStatusCode.NotFound, (await system.DroneScheduler.Client.GetAsync($"api/dronedeliveries/{id}")).StatusCode);
    }

    [Fact]
    public async Task Unreadable_invalid_and_unknown_messages_are_dead_lettered_with_their_reason()
    {
        await using var workflow = await system.StartWorkflowAsync("poison");
        using var metrics = new MetricRecorder(ServiceBusClientTelemetry.MessagesReceived, ServiceBusClientTelemetry.MessagesDeadLettered);
        var notJson = Message("delivery", "{ this is not json");
        var missingFields = Message("delivery", """{"deliveryId":"d-1","ownerId":"o-1"}""");
        var unknown = Message("teleport", """{"deliveryId":"d-2"}""");
        var deliveryTwice = Message("cancel", """{"deliveryId":"d-3","deliveryId":"d-4"}""");

        foreach (var message in new[] { notJson, missingFields, unknown, deliveryTwice })
        {
            await system.Client.SendAsync("poison", message);
        }

        var dead = new Dictionary<string, ServiceBusReceivedMessage>();
        for (var i = 0; i < 4; i++)
        {
            var message = await system.Client.ReceiveDeadLetterAsync("poison");
            dead[message.MessageId!] = message;
        }

        Assert.Equal(DeliveryWorkflow.Reasons.InvalidMessage, dead[notJson.MessageId!].DeadLetterReason);
        Assert.Equal(DeliveryWorkflow.Reasons.InvalidMessage, dead[missingFields.MessageId!].DeadLetterReason);
        Assert.Contains("pickupLocation", dead[missingFields.MessageId!].DeadLetterErrorDescription);
        Assert.Contains("packageInfo", dead[missingFields.MessageId!].DeadLetterErrorDescription);
        Assert.Equal(DeliveryWorkflow.Reasons.UnknownOperation, dead[unknown.MessageId!].DeadLetterReason);
        Assert.Contains("teleport", dead[unknown.MessageId!].DeadLetterErrorDescription);
        // Which delivery a message naming two would cancel is up to its reader: it is not read.
        Assert.Equal(DeliveryWorkflow.Reasons.InvalidMessage, dead[deliveryTwice.MessageId!].DeadLetterReason);
        Assert.Contains("Duplicate property 'deliveryId'", dead[deliveryTwice.MessageId!].DeadLetterErrorDescription);
        // Counted once the settlement has returned, which may be just after the dead-lettered copy was read.
        Assert.True(await Eventually.TrueAsync(() => metrics.Sum(ServiceBusClientTelemetry.MessagesDeadLettered, (ServiceBusClientTelemetry.DestinationTag, "poison")) == 4, Patience));
        Assert.Equal(4, metrics.Sum(ServiceBusClientTelemetry.MessagesReceived, (ServiceBusClientTelemetry.DestinationTag, "poison")));

        static ServiceBusMessage Message(string operation, string body)
        {
            var message = new ServiceBusMessage(body) { MessageId = NewId() };
            message.ApplicationProperties[DeliveryMessages.OperationProperty] = operation;
            return message;
        }
    }

    [Fact]
    public async Task The_processor_settings_reach_the_service_bus_processor()
    {
        await using var tuned = await system.StartWorkflowAsync("no-such-queue", new()
        {
            ["Processor:MaxConcurrentCalls"] = "20",
            ["Processor:PrefetchCount"] = "3000",
            ["Processor:MaxAutoLockRenewalDuration"] = "00:10:00",
        });
        await using var baseline = await ServiceApp.StartAsync(Definitions.Workflow, new Dictionary<string, string?>
        {
            ["ServiceBus:ConnectionString"] = system.ServiceBus.ConnectionString,
            ["ServiceBus:QueueName"] = "no-such-queue",
        });

        var processor = tuned.Services.GetRequiredService<DeliveryProcessor>().Processor;
        var defaults = baseline.Services.GetRequiredService<DeliveryProcessor>().Processor;

        Assert.Equal((20, 3000, TimeSpan.FromMinutes(10), false), (processor.MaxConcurrentCalls, processor.PrefetchCount, processor.MaxAutoLockRenewalDuration, processor.AutoCompleteMessages));
        Assert.Equal((1, 0, TimeSpan.FromMinutes(5), false), (defaults.MaxConcurrentCalls, defaults.PrefetchCount, defaults.MaxAutoLockRenewalDuration, defaults.AutoCompleteMessages));
        Assert.Equal(ServiceBusReceiveMode.PeekLock, processor.ReceiveMode);
        Assert.Equal("no-such-queue", processor.EntityPath);
    }

    [Fact]
    public async Task Not_ready_while_the_queue_cannot_be_processed()
    {
        await using var workflow = await system.StartWorkflowAsync("no-such-queue");
        var processor = workflow.Services.GetRequiredService<DeliveryProcessor>().Processor;

        // The processor runs (the SDK keeps retrying in the background), yet the queue cannot be read.
        Assert.True(await Eventually.TrueAsync(() => processor.IsProcessing, Patience));
        var ready = await workflow.Client.GetAsync("health/ready");

        Assert.Equal(HttpStatusCode.ServiceUnavailable, ready.StatusCode);
        var report = await ready.Content.ReadAsStringAsync();
        Assert.Contains("Not processing no-such-queue", report);
        Assert.Contains("MessagingEntityNotFound", report);
        Assert.Equal(HttpStatusCode.OK, (await system.Workflow.Client.GetAsync("health/ready")).StatusCode);
    }

    [Theory]
    [InlineData("Processor:MaxConcurrentCalls", "0", "Setting 'Processor:MaxConcurrentCalls' = '0' is invalid")]
    [InlineData("Processor:PrefetchCount", "-1", "Setting 'Processor:PrefetchCount' = '-1' is invalid")]
    [InlineData("Processor:MaxAutoLockRenewalDuration", "2.00:00:00", "Setting 'Processor:MaxAutoLockRenewalDuration'")]
    [InlineData("Processor:MaxDeliveryCount", "0", "Setting 'Processor:MaxDeliveryCount' = '0' is invalid")]
    [InlineData("Processor:MaxConcurrency", "20", "MaxConcurrency")]
    [InlineData("Redelivery:BaseDelay", "00:00:00", "Setting 'Redelivery:BaseDelay' = '00:00:00' is invalid")]
    [InlineData("Redelivery:MaxDelay", "00:00:01", "MaxDelay (00:00:01) must not be shorter than BaseDelay (00:00:02)")]
    [InlineData("CircuitBreaker:FailureRatio", "0", "Setting 'CircuitBreaker:FailureRatio' = '0' is invalid")]
    [InlineData("ServiceBus:FullyQualifiedNamespace", "contoso.servicebus.windows.net", "Exactly one of ConnectionString (shared access key) and FullyQualifiedNamespace")]
    [InlineData("ServiceBus:ConnectionString", "Endpoint=nonsense", "Setting 'ServiceBus:ConnectionString'")]
    [InlineData("Backends:Package:BaseAddress", "/relative", "Setting 'Backends:Package:BaseAddress'")]
    public Task Workflow_refuses_a_bad_setting(string key, string value, string expected) =>
        SettingsTests.AssertRefusedAsync(Definitions.Workflow, new()
        {
            ["ServiceBus:ConnectionString"] = system.ServiceBus.ConnectionString,
            [key] = value,
        }, expected);

    private Emulators.ServiceBus.Metrics.QueueCounters Counters(string queue) => system.ServiceBus.GetMetrics()[queue].Counters;

    /// <summary>Exactly one package, drone assignment, utilization document and delivery (with one Created event) exist.</summary>
    private async Task AssertCreatedOnceAsync(string id, string owner, DeliveryRequest request, int year, int month)
    {
        var events = await (await system.Delivery.Client.GetAsync($"api/deliveries/{id}/events")).ReadAsync<TrackingEvent[]>();
        Assert.Equal([DeliveryStage.Created], events.Select(e => e.Stage));
        var invoice = await (await system.Gateway.Client.GetAsync($"api/invoices/{owner}?year={year}&month={month}")).ReadAsync<Invoice>();
        Assert.Equal((1, 1, request.PackageInfo!.Weight!.Value), (invoice.Deliveries.Count, invoice.Packages.Count, invoice.Packages.TotalWeight));
        using var cosmos = new CosmosClient(system.Cosmos.ConnectionString, new CosmosClientOptions { ConnectionMode = ConnectionMode.Gateway, LimitToEndpoint = true });
        foreach (var container in new[] { "utilization", "drones" })
        {
            var query = new QueryDefinition("SELECT VALUE COUNT(1) FROM c WHERE c.id = @id").WithParameter("@id", id);
            using var iterator = cosmos.GetContainer("dronedelivery", container).GetItemQueryIterator<int>(query);
            var count = 0;
            while (iterator.HasMoreResults)
            {
                count += (await iterator.ReadNextAsync()).Sum();
            }

            Assert.Equal(1, count);
        }
    }

    private static IResult Increment(ref int counter, IResult result)
    {
        Interlocked.Increment(ref counter);
        return result;
    }

    /// <summary>Forwards the request to the real backend, then answers 503 as if the answer had been lost.</summary>
    private sealed class ForwardThenFail(Uri target) : IResult
    {
        public async Task ExecuteAsync(HttpContext context)
        {
            using var forward = new HttpClient { BaseAddress = target };
            using var body = new StreamContent(context.Request.Body);
            body.Headers.TryAddWithoutValidation("Content-Type", context.Request.ContentType);
            using var response = await forward.PutAsync(context.Request.Path.Value!.TrimStart('/'), body);
            Assert.Equal(HttpStatusCode.Created, response.StatusCode);
            context.Response.StatusCode = StatusCodes.Status503ServiceUnavailable;
        }
    }
}
