using System.Diagnostics;
using System.Globalization;
using System.Text.Json;
using Azure.Messaging.ServiceBus;
using DroneDelivery.Contracts;
using DroneDelivery.ServiceClients.Backends;
using DroneDelivery.ServiceClients.Messaging;
using Microsoft.Extensions.Options;

namespace DroneDelivery.Workflow;

/// <summary>What to do with a message once its work is done or has failed.</summary>
internal abstract record Settlement
{
    public sealed record Complete : Settlement;

    /// <summary>
    /// A transient failure: a copy is scheduled for later and the original completed.
    /// <paramref name="Tag"/> is the <c>reason</c> tag of the retries counter; <paramref name="BackendFailure"/>
    /// when a backend failed (what the circuit breaker counts).
    /// </summary>
    public sealed record Retry(string Reason, string Tag, bool BackendFailure) : Settlement;

    /// <summary>Final failure; <paramref name="Compensated"/> when partial work was undone first.</summary>
    public sealed record DeadLetter(string Reason, string Description, bool Compensated = false) : Settlement;
}

/// <summary>Undoes one step that succeeded (or may have).</summary>
internal sealed record Compensation(string Step, Func<CancellationToken, Task<BackendResult<NoContent>>> UndoAsync);

/// <summary>
/// What the workflow does with each message. A new delivery (<c>delivery</c>) creates the package,
/// assigns a drone and schedules the delivery, in that order. Every step is idempotent on the delivery
/// id, so a redelivered message repeats the steps without creating anything twice. A transient failure
/// (5xx, 408, 429, timeout, connection) schedules a copy of the message for later, with exponential
/// back-off and jitter (<see cref="RedeliverySettings"/>), then completes the original; a permanent one
/// (another 4xx, an invalid message) dead-letters it with a reason — after undoing the steps already
/// done (release the drone, remove the package). A transient failure is final too once
/// <see cref="RedeliverySettings.TransientBudget"/> has passed since the first attempt, or on the queue's
/// last delivery (<see cref="ProcessorSettings.MaxDeliveryCount"/>, the broker's backstop, reached only
/// when messages are abandoned or their locks lost). <c>cancel</c> and <c>reschedule</c> work the same way.
/// </summary>
public sealed partial class DeliveryWorkflow(
    WorkflowBackends backends,
    IOptions<ProcessorSettings> settings,
    IOptions<RedeliverySettings> redelivery,
    IOptions<ServiceBusSettings> serviceBus,
    ServiceBusClient client,
    WorkflowCircuitBreaker breaker,
    TimeProvider time,
    ILogger<DeliveryWorkflow> logger)
{
    /// <summary>Application property: the attempt this message is (1 for the original, absent there).</summary>
    public const string AttemptProperty = "dronedelivery-attempt";

    /// <summary>Application property: when the first attempt of this message started (ISO 8601, UTC).</summary>
    public const string FirstAttemptProperty = "dronedelivery-first-attempt";

    /// <summary>Application property: the MessageId of the original message, kept by its retries.</summary>
    public const string OriginalMessageIdProperty = "dronedelivery-original-message-id";

    /// <summary>Dead-letter reasons.</summary>
    public static class Reasons
    {
        /// <summary>The body or its fields are unreadable or invalid.</summary>
        public const string InvalidMessage = "InvalidMessage";

        /// <summary>The <c>operation</c> property is missing or unknown.</summary>
        public const string UnknownOperation = "UnknownOperation";

        /// <summary>A backend refused a step with a 4xx (other than 408/429); the description names it.</summary>
        public const string BackendRejected = "BackendRejected";

        /// <summary>A step still failed transiently on the last delivery.</summary>
        public const string TransientFailuresExhausted = "TransientFailuresExhausted";

        /// <summary>Undoing the steps done failed on the last delivery: partial work may remain (logged as an error).</summary>
        public const string CompensationFailed = "CompensationFailed";

        /// <summary>Cancel or reschedule of a delivery that was still unknown on the last delivery.</summary>
        public const string DeliveryNotFound = "DeliveryNotFound";

        /// <summary>Reschedule of a cancelled delivery.</summary>
        public const string DeliveryCancelled = "DeliveryCancelled";
    }

    private const int MaxDescriptionLength = 1024;

    private readonly int _maxDeliveryCount = settings.Value.MaxDeliveryCount;

    private readonly RedeliverySettings _redelivery = redelivery.Value;

    private readonly ServiceBusSender _retrySender = client.CreateSender(serviceBus.Value.QueueName);

    /// <summary>The processor's message handler: runs the operation and settles the message.</summary>
    public async Task HandleAsync(ProcessMessageEventArgs args)
    {
        var message = args.Message;
        var started = Stopwatch.GetTimestamp();
        ServiceBusClientTelemetry.Record(MessageEvent.Received, args.EntityPath);
        var operation = message.ApplicationProperties.TryGetValue(DeliveryMessages.OperationProperty, out var value) && value is string name ? name : null;
        var operationTag = operation is DeliveryMessages.Delivery or DeliveryMessages.Cancel or DeliveryMessages.Reschedule ? operation : "unknown";
        Activity.Current?.SetTag("dronedelivery.operation", operationTag);
        Activity.Current?.SetTag("dronedelivery.delivery_id", message.ApplicationProperties.GetValueOrDefault(DeliveryMessages.DeliveryIdProperty) as string);
        var now = time.GetUtcNow();
        var (attempt, firstAttempt) = ReadAttempt(message, now);
        var lastAttempt = message.DeliveryCount >= _maxDeliveryCount || now - firstAttempt >= _redelivery.TransientBudget;

        Settlement settlement;
        try
        {
            settlement = operation switch
            {
                DeliveryMessages.Delivery => await ScheduleAsync(message, lastAttempt, args.CancellationToken),
                DeliveryMessages.Cancel => await CancelAsync(message, lastAttempt, args.CancellationToken),
                DeliveryMessages.Reschedule => await RescheduleAsync(message, lastAttempt, args.CancellationToken),
                _ => new Settlement.DeadLetter(Reasons.UnknownOperation, $"The '{DeliveryMessages.OperationProperty}' property is '{operation ?? "(missing)"}'; expected delivery, cancel or reschedule."),
            };
        }
        catch (OperationCanceledException) when (args.CancellationToken.IsCancellationRequested)
        {
            // The processor is stopping (the pod is shutting down): give the message back at once rather than let it
            // wait out its lock. Its steps may be half done; the next delivery repeats them, idempotent on the delivery id.
            await ReleaseAsync(args, operationTag, started);
            return;
        }

        switch (settlement)
        {
            case Settlement.Retry { BackendFailure: true }:
                breaker.RecordTransientFailure();
                break;
            case Settlement.Retry:
                break;
            default:
                breaker.RecordSuccess();
                break;
        }

        var outcome = await SettleAsync(args, settlement, operationTag, attempt, firstAttempt);
        var tags = new TagList { { "operation", operationTag }, { "outcome", outcome } };
        WorkflowTelemetry.MessageCount.Add(1, tags);
        WorkflowTelemetry.ProcessDurations.Record(Stopwatch.GetElapsedTime(started).TotalSeconds, tags);
    }

    private async Task ReleaseAsync(ProcessMessageEventArgs args, string operationTag, long started)
    {
        var outcome = WorkflowTelemetry.Outcomes.Abandoned;
        try
        {
            await args.AbandonMessageAsync(args.Message, cancellationToken: CancellationToken.None);
            ServiceBusClientTelemetry.Record(MessageEvent.Abandoned, args.EntityPath);
            LogAbandoned(logger, args.Message.MessageId, args.Message.DeliveryCount, "the processor is stopping");
        }
        catch (Exception e) when (ServiceBusClientTelemetry.IsLockLost(e))
        {
            ServiceBusClientTelemetry.Record(MessageEvent.LockLost, args.EntityPath);
            outcome = WorkflowTelemetry.Outcomes.LockLost;
        }
        catch (ServiceBusException e)
        {
            LogSettleFailed(logger, args.Message.MessageId, e.Reason.ToString(), e.Message);
            outcome = WorkflowTelemetry.Outcomes.SettleFailed;
        }

        var tags = new TagList { { "operation", operationTag }, { "outcome", outcome } };
        WorkflowTelemetry.MessageCount.Add(1, tags);
        WorkflowTelemetry.ProcessDurations.Record(Stopwatch.GetElapsedTime(started).TotalSeconds, tags);
    }

    private async Task<Settlement> ScheduleAsync(ServiceBusReceivedMessage message, bool lastAttempt, CancellationToken cancellationToken)
    {
        if (!TryRead<DeliveryRequestMessage>(message, out var body, out var unreadable))
        {
            return new Settlement.DeadLetter(Reasons.InvalidMessage, unreadable);
        }

        var errors = new FieldErrors();
        errors.RequireIdentifier("deliveryId", body.DeliveryId);
        if (body.Validate(errors) is not { } request || !errors.IsEmpty)
        {
            return new Settlement.DeadLetter(Reasons.InvalidMessage, errors.ToString());
        }

        var id = body.DeliveryId!;
        List<Compensation> done = [];

        var package = await backends.CreatePackageAsync(id, request, cancellationToken);
        var removePackage = new Compensation("DeletePackage", token => backends.DeletePackageAsync(request.PackageId, id, token));
        if (!package.Succeeded)
        {
            return await FailAsync(package, done, removePackage, lastAttempt, cancellationToken);
        }

        done.Add(removePackage);
        var drone = await backends.AssignDroneAsync(id, new DroneAssignmentRequest
        {
            OwnerId = request.OwnerId,
            PickupLocation = request.PickupLocation,
            DropoffLocation = request.DropoffLocation,
            PickupTime = request.PickupTime,
            Expedited = request.Expedited,
            PackageId = request.PackageId,
        }, cancellationToken);
        var releaseDrone = new Compensation("ReleaseDrone", token => backends.ReleaseDroneAsync(id, token));
        if (!drone.Succeeded)
        {
            return await FailAsync(drone, done, releaseDrone, lastAttempt, cancellationToken);
        }

        done.Add(releaseDrone);
        var delivery = await backends.ScheduleDeliveryAsync(id, new DeliverySchedule(request, drone.Value!.DroneId), cancellationToken);
        if (!delivery.Succeeded)
        {
            return await FailAsync(delivery, done, new Compensation("CancelDelivery", async token => AsNoContent(await backends.CancelDeliveryAsync(id, token))), lastAttempt, cancellationToken);
        }

        return new Settlement.Complete();
    }

    private async Task<Settlement> CancelAsync(ServiceBusReceivedMessage message, bool lastAttempt, CancellationToken cancellationToken)
    {
        if (!TryRead<CancelMessage>(message, out var body, out var unreadable) || !Identifiers.IsValid(body.DeliveryId))
        {
            return new Settlement.DeadLetter(Reasons.InvalidMessage, unreadable ?? $"deliveryId {Identifiers.Rule}.");
        }

        var id = body.DeliveryId;
        var cancelled = await backends.CancelDeliveryAsync(id, cancellationToken);
        if (cancelled.Outcome == BackendOutcome.NotFound)
        {
            // The delivery's own message may not have been processed yet.
            return lastAttempt
                ? new Settlement.DeadLetter(Reasons.DeliveryNotFound, $"Delivery '{id}' was never scheduled.")
                : new Settlement.Retry($"delivery '{id}' not scheduled yet", "not_scheduled_yet", BackendFailure: false);
        }

        if (!cancelled.Succeeded)
        {
            return Fail(cancelled, lastAttempt);
        }

        var released = await backends.ReleaseDroneAsync(id, cancellationToken);
        if (!released.Succeeded && released.Outcome != BackendOutcome.NotFound)
        {
            return Fail(released, lastAttempt);
        }

        var removed = await backends.DeletePackageAsync(cancelled.Value!.PackageId, id, cancellationToken);
        if (!removed.Succeeded && removed.Outcome is not (BackendOutcome.NotFound or BackendOutcome.Rejected))
        {
            return Fail(removed, lastAttempt);
        }

        return new Settlement.Complete();
    }

    private async Task<Settlement> RescheduleAsync(ServiceBusReceivedMessage message, bool lastAttempt, CancellationToken cancellationToken)
    {
        if (!TryRead<RescheduleMessage>(message, out var body, out var unreadable))
        {
            return new Settlement.DeadLetter(Reasons.InvalidMessage, unreadable);
        }

        var errors = new FieldErrors();
        errors.RequireIdentifier("deliveryId", body.DeliveryId);
        if (!body.Validate(errors) || !errors.IsEmpty)
        {
            return new Settlement.DeadLetter(Reasons.InvalidMessage, errors.ToString());
        }

        var id = body.DeliveryId!;
        var current = await backends.GetDeliveryAsync(id, cancellationToken);
        if (current.Outcome == BackendOutcome.NotFound)
        {
            return lastAttempt
                ? new Settlement.DeadLetter(Reasons.DeliveryNotFound, $"Delivery '{id}' was never scheduled.")
                : new Settlement.Retry($"delivery '{id}' not scheduled yet", "not_scheduled_yet", BackendFailure: false);
        }

        if (!current.Succeeded)
        {
            return Fail(current, lastAttempt);
        }

        var before = current.Value!;
        if (before.Stage == DeliveryStage.Cancelled)
        {
            return new Settlement.DeadLetter(Reasons.DeliveryCancelled, $"Delivery '{id}' was cancelled.");
        }

        var pickupTime = body.PickupTime ?? before.PickupTime;
        if ((body.Deadline ?? before.Deadline) <= pickupTime)
        {
            return new Settlement.DeadLetter(Reasons.InvalidMessage, "deadline: deadline must be later than pickupTime.");
        }

        DroneAssignmentRequest Flight(string pickup, string dropoff, DateTimeOffset time) => new()
        {
            OwnerId = before.OwnerId,
            PickupLocation = pickup,
            DropoffLocation = dropoff,
            PickupTime = time,
            Expedited = before.Expedited,
            PackageId = before.PackageId,
        };

        var restoreFlight = new Compensation("RestoreFlight", async token =>
            AsNoContent(await backends.AssignDroneAsync(id, Flight(before.PickupLocation, before.DropoffLocation, before.PickupTime), token)));
        var drone = await backends.AssignDroneAsync(
            id, Flight(body.PickupLocation ?? before.PickupLocation, body.DropoffLocation ?? before.DropoffLocation, pickupTime), cancellationToken);
        if (!drone.Succeeded)
        {
            return await FailAsync(drone, [], restoreFlight, lastAttempt, cancellationToken);
        }

        var rescheduled = await backends.RescheduleDeliveryAsync(id, body, cancellationToken);
        if (!rescheduled.Succeeded)
        {
            return await FailAsync(rescheduled, [restoreFlight], null, lastAttempt, cancellationToken);
        }

        return new Settlement.Complete();
    }

    /// <summary>
    /// After a failed step: abandon if it may succeed later and this is not the last delivery; otherwise
    /// undo what was done (and, if the failure was transient, what the failed step may have done) and
    /// dead-letter. If undoing fails, retry the whole message unless this is the last delivery.
    /// </summary>
    private async Task<Settlement> FailAsync<T>(
        BackendResult<T> failure, List<Compensation> done, Compensation? undoFailedStep, bool lastAttempt, CancellationToken cancellationToken)
    {
        if (failure.IsTransient && !lastAttempt)
        {
            return RetryAfter(failure);
        }

        var reason = failure.IsTransient ? Reasons.TransientFailuresExhausted : Reasons.BackendRejected;
        List<Compensation> undo = failure.IsTransient && undoFailedStep is not null ? [undoFailedStep, .. Enumerable.Reverse(done)] : [.. Enumerable.Reverse(done)];
        if (undo.Count == 0)
        {
            return new Settlement.DeadLetter(reason, failure.Describe());
        }

        foreach (var step in undo)
        {
            var result = await step.UndoAsync(cancellationToken);
            if (result.Succeeded || result.Outcome == BackendOutcome.NotFound)
            {
                LogCompensated(logger, step.Step, failure.Describe());
                continue;
            }

            if (!lastAttempt)
            {
                return new Settlement.Retry($"{failure.Describe()}; undoing {step.Step} failed: {result.Describe()}", "compensation_failed", result.IsTransient);
            }

            LogCompensationFailed(logger, step.Step, result.Describe(), failure.Describe());
            return new Settlement.DeadLetter(Reasons.CompensationFailed, $"{failure.Describe()}; undoing {step.Step} failed: {result.Describe()}");
        }

        return new Settlement.DeadLetter(reason, failure.Describe(), Compensated: true);
    }

    private static Settlement.Retry RetryAfter<T>(BackendResult<T> failure) =>
        new(failure.Describe(), $"{failure.Backend.ToLowerInvariant()}_{(failure.Outcome == BackendOutcome.TimedOut ? "timed_out" : "failed")}", BackendFailure: true);

    /// <summary>A failed step with nothing to undo.</summary>
    private static Settlement Fail<T>(BackendResult<T> failure, bool lastAttempt) =>
        failure.IsTransient && !lastAttempt
            ? RetryAfter(failure)
            : new Settlement.DeadLetter(failure.IsTransient ? Reasons.TransientFailuresExhausted : Reasons.BackendRejected, failure.Describe());

    private async Task<string> SettleAsync(ProcessMessageEventArgs args, Settlement settlement, string operationTag, int attempt, DateTimeOffset firstAttempt)
    {
        var message = args.Message;
        var queue = args.EntityPath;
        try
        {
            switch (settlement)
            {
                case Settlement.Complete:
                    await args.CompleteMessageAsync(message, CancellationToken.None);
                    ServiceBusClientTelemetry.Record(MessageEvent.Completed, queue);
                    return WorkflowTelemetry.Outcomes.Completed;
                case Settlement.Retry retry:
                    var delay = Backoff(attempt);
                    var copy = new ServiceBusMessage(message)
                    {
                        MessageId = $"{OriginalMessageId(message)}.{attempt + 1}",
                    };
                    copy.ApplicationProperties[OriginalMessageIdProperty] = OriginalMessageId(message);
                    copy.ApplicationProperties[AttemptProperty] = attempt + 1;
                    copy.ApplicationProperties[FirstAttemptProperty] = firstAttempt.UtcDateTime.ToString("O", CultureInfo.InvariantCulture);
                    try
                    {
                        // Send, then complete: a crash in between at worst leaves both the copy and the
                        // original, so the message is processed twice — which the steps' idempotency on the
                        // delivery id absorbs. Complete first could lose it.
                        await _retrySender.ScheduleMessageAsync(copy, time.GetUtcNow() + delay, CancellationToken.None);
                        ServiceBusClientTelemetry.Record(MessageEvent.Sent, queue);
                    }
                    catch (Exception e)
                    {
                        LogRetryScheduleFailed(logger, message.MessageId, e.Message);
                        LogAbandoned(logger, message.MessageId, message.DeliveryCount, retry.Reason);
                        await args.AbandonMessageAsync(message, cancellationToken: CancellationToken.None);
                        ServiceBusClientTelemetry.Record(MessageEvent.Abandoned, queue);
                        return WorkflowTelemetry.Outcomes.Abandoned;
                    }

                    WorkflowTelemetry.RetryCount.Add(1, new TagList { { "operation", operationTag }, { "reason", retry.Tag } });
                    LogRetryScheduled(logger, message.MessageId, attempt, delay.TotalSeconds, retry.Reason);
                    await args.CompleteMessageAsync(message, CancellationToken.None);
                    ServiceBusClientTelemetry.Record(MessageEvent.Completed, queue);
                    return WorkflowTelemetry.Outcomes.Retried;
                case Settlement.DeadLetter deadLetter:
                    var description = deadLetter.Description.Length <= MaxDescriptionLength ? deadLetter.Description : deadLetter.Description[..MaxDescriptionLength];
                    LogDeadLettered(logger, message.MessageId, deadLetter.Reason, deadLetter.Compensated, description);
                    await args.DeadLetterMessageAsync(message, deadLetter.Reason, description, CancellationToken.None);
                    ServiceBusClientTelemetry.Record(MessageEvent.DeadLettered, queue);
                    return deadLetter.Compensated ? WorkflowTelemetry.Outcomes.Compensated : WorkflowTelemetry.Outcomes.DeadLettered;
                default:
                    throw new InvalidOperationException($"Unknown settlement {settlement}.");
            }
        }
        catch (Exception e) when (ServiceBusClientTelemetry.IsLockLost(e))
        {
            ServiceBusClientTelemetry.Record(MessageEvent.LockLost, queue);
            LogLockLost(logger, message.MessageId, message.DeliveryCount);
            return WorkflowTelemetry.Outcomes.LockLost;
        }
        catch (ServiceBusException e)
        {
            LogSettleFailed(logger, message.MessageId, e.Reason.ToString(), e.Message);
            return WorkflowTelemetry.Outcomes.SettleFailed;
        }
    }

    /// <summary>The back-off after failed attempt <paramref name="attempt"/>: BaseDelay doubled per attempt, at most MaxDelay, drawn between half of it and all of it.</summary>
    private TimeSpan Backoff(int attempt)
    {
        var exponential = _redelivery.BaseDelay.Ticks * Math.Pow(2, Math.Min(attempt - 1, 30));
        var ceiling = Math.Min(exponential, _redelivery.MaxDelay.Ticks);
        return TimeSpan.FromTicks((long)(ceiling / 2 + (Random.Shared.NextDouble() * ceiling / 2)));
    }

    /// <summary>The attempt this message is and when its first attempt started (now, for an original message).</summary>
    private static (int Attempt, DateTimeOffset FirstAttempt) ReadAttempt(ServiceBusReceivedMessage message, DateTimeOffset now)
    {
        var attempt = message.ApplicationProperties.TryGetValue(AttemptProperty, out var a) && a is int n && n > 0 ? n : 1;
        var first = message.ApplicationProperties.TryGetValue(FirstAttemptProperty, out var f) && f is string text
            && DateTimeOffset.TryParse(text, CultureInfo.InvariantCulture, DateTimeStyles.RoundtripKind, out var parsed) && parsed <= now
            ? parsed
            : now;
        return (attempt, first);
    }

    private static string OriginalMessageId(ServiceBusReceivedMessage message) =>
        message.ApplicationProperties.TryGetValue(OriginalMessageIdProperty, out var id) && id is string text ? text : message.MessageId ?? string.Empty;

    private static bool TryRead<T>(ServiceBusReceivedMessage message, out T value, out string error)
        where T : class
    {
        try
        {
            value = message.Body.ToObjectFromJson<T>(ContractJson.Options)!;
            if (value is not null)
            {
                error = string.Empty;
                return true;
            }

            error = "The body is JSON null.";
        }
        catch (Exception e) when (e is JsonException or NotSupportedException or ArgumentException or InvalidOperationException)
        {
            error = $"The body is not a {typeof(T).Name}: {e.Message}";
        }

        value = null!;
        return false;
    }

    private static BackendResult<NoContent> AsNoContent<T>(BackendResult<T> result) =>
        new(result.Backend, result.Outcome, result.StatusCode, null, result.Detail);

    [LoggerMessage(EventId = 4400, EventName = "MessageAbandoned", Level = LogLevel.Information, Message = "Message {MessageId} (delivery {DeliveryCount}) abandoned: {Reason}")]
    private static partial void LogAbandoned(ILogger logger, string? messageId, int deliveryCount, string reason);

    [LoggerMessage(EventId = 4406, EventName = "RetryScheduled", Level = LogLevel.Information, Message = "Message {MessageId} (attempt {Attempt}) retried in {DelaySeconds} s: {Reason}")]
    private static partial void LogRetryScheduled(ILogger logger, string? messageId, int attempt, double delaySeconds, string reason);

    [LoggerMessage(EventId = 4407, EventName = "RetryScheduleFailed", Level = LogLevel.Warning, Message = "Message {MessageId}: its retry could not be scheduled, so it is abandoned: {Error}")]
    private static partial void LogRetryScheduleFailed(ILogger logger, string? messageId, string error);

    [LoggerMessage(EventId = 4401, EventName = "MessageDeadLettered", Level = LogLevel.Warning, Message = "Message {MessageId} dead-lettered ({Reason}, compensated: {Compensated}): {Description}")]
    private static partial void LogDeadLettered(ILogger logger, string? messageId, string reason, bool compensated, string description);

    [LoggerMessage(EventId = 4402, EventName = "StepCompensated", Level = LogLevel.Information, Message = "Undid {Step} after {Failure}")]
    private static partial void LogCompensated(ILogger logger, string step, string failure);

    [LoggerMessage(EventId = 4403, EventName = "CompensationFailed", Level = LogLevel.Error, Message = "Undoing {Step} failed ({Result}) after {Failure}; partial work remains")]
    private static partial void LogCompensationFailed(ILogger logger, string step, string result, string failure);

    [LoggerMessage(EventId = 4404, EventName = "MessageLockLost", Level = LogLevel.Warning, Message = "Message {MessageId} (delivery {DeliveryCount}): lock lost before settlement; it will be delivered again")]
    private static partial void LogLockLost(ILogger logger, string? messageId, int deliveryCount);

    [LoggerMessage(EventId = 4405, EventName = "SettleFailed", Level = LogLevel.Warning, Message = "Message {MessageId} could not be settled ({Reason}): {Error}")]
    private static partial void LogSettleFailed(ILogger logger, string? messageId, string reason, string error);
}
