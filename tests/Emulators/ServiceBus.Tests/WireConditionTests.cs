using DroneDelivery.Emulators.ServiceBus.Amqp;
using Microsoft.Extensions.Time.Testing;
using Lite = global::Amqp;
using LiteFraming = global::Amqp.Framing;
using LiteTypes = global::Amqp.Types;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>
/// Every error condition the emulator sends, driven by AMQPNetLite (an AMQP 1.0 implementation of another lineage)
/// and asserted by its exact condition string: refused links, rejected deliveries, management and $cbs answers,
/// session errors and, with raw frames AMQPNetLite encodes, what ends a session or the connection. The emulator runs
/// on a fake clock the tests move. docs/emulators/service-bus.md ("Which error ends what") lists them all.
/// </summary>
public sealed class WireConditionTests : IAsyncLifetime
{
    private const string Sessions = SessionScope.Queue;
    private const string Plain = SessionScope.PlainQueue;
    private const string Topic = SessionScope.Topic;
    private static readonly string PlainSubscription = $"{SessionScope.Topic}/Subscriptions/{SessionScope.PlainSubscription}";

    private readonly FakeTimeProvider _time = new(DateTimeOffset.FromUnixTimeMilliseconds(DateTimeOffset.UtcNow.ToUnixTimeMilliseconds()));
    private ServiceBusEmulator _emulator = null!;
    private Lite.Connection _connection = null!;
    private Lite.Session _session = null!;

    public async Task InitializeAsync()
    {
        _emulator = await ServiceBusEmulator.StartAsync(SessionScope.Options(_time));
        (_connection, _session) = await ConnectAsync();
    }

    public async Task DisposeAsync()
    {
        await _connection.CloseAsync();
        await _emulator.DisposeAsync();
    }

    /// <summary>A connection and session holding a token for the whole namespace.</summary>
    private async Task<(Lite.Connection, Lite.Session)> ConnectAsync()
    {
        var connection = await LitePeer.ConnectAsync(_emulator);
        var session = new Lite.Session(connection);
        Assert.Equal(202, await LitePeer.PutTokenAsync(session, _emulator, LitePeer.Audience(_emulator, string.Empty)));
        return (connection, session);
    }

    private static string Name() => "link-" + Guid.NewGuid().ToString("N");

    private static Lite.ReceiverLink SessionReceiver(Lite.Session session, string entity, object? sessionFilter, uint? waitMilliseconds = null, Lite.OnAttached? onAttached = null) =>
        new(session, Name(), new LiteFraming.Attach
        {
            Source = new LiteFraming.Source
            {
                Address = entity,
                FilterSet = new LiteTypes.Map { [new LiteTypes.Symbol("com.microsoft:session-filter")] = sessionFilter },
            },
            Target = new LiteFraming.Target { Address = Name() },
            RcvSettleMode = LiteFraming.ReceiverSettleMode.Second,
            Properties = waitMilliseconds is { } wait ? new LiteTypes.Fields { [new LiteTypes.Symbol("com.microsoft:timeout")] = wait } : null,
        }, onAttached);

    private static Lite.Message InSession(string body, string sessionId) => new(body) { Properties = new LiteFraming.Properties { GroupId = sessionId } };

    private async Task SendAsync(string entity, params Lite.Message[] messages)
    {
        var sender = new Lite.SenderLink(_session, Name(), entity);
        foreach (var message in messages)
        {
            await sender.SendAsync(message);
        }

        await sender.CloseAsync();
    }

    private Task<ManagementReply> ManagementAsync(string entity, string operation, LiteTypes.Map? body = null) =>
        LitePeer.ManagementAsync(_session, entity, operation, body ?? []);

    private static void AssertAnswer(ManagementReply reply, int status, string? condition)
    {
        Assert.True(reply.Status == status && reply.Condition == condition, $"expected {status} {condition}, got {reply.Status} {reply.Condition}: {reply.Description}");
    }

    // ---- refused links ----

    [Fact]
    public async Task Refused_attaches_end_only_their_own_link_each_with_its_condition()
    {
        Assert.Equal("amqp:not-found", await LitePeer.RefusalAsync(new Lite.SenderLink(_session, Name(), "no-such-queue")));
        Assert.Equal("amqp:not-found", await LitePeer.RefusalAsync(new Lite.ReceiverLink(_session, Name(), $"{Topic}/Subscriptions/nobody")));
        Assert.Equal("amqp:not-allowed", await LitePeer.RefusalAsync(new Lite.SenderLink(_session, Name(), PlainSubscription)));
        Assert.Equal("amqp:not-allowed", await LitePeer.RefusalAsync(new Lite.SenderLink(_session, Name(), $"{Plain}/$DeadLetterQueue")));
        Assert.Equal("amqp:not-allowed", await LitePeer.RefusalAsync(new Lite.ReceiverLink(_session, Name(), Topic)));
        Assert.Equal("amqp:not-allowed", await LitePeer.RefusalAsync(new Lite.ReceiverLink(_session, Name(), Sessions)));
        Assert.Equal("amqp:not-allowed", await LitePeer.RefusalAsync(SessionReceiver(_session, Plain, "s-1")));
        Assert.Equal("amqp:invalid-field", await LitePeer.RefusalAsync(SessionReceiver(_session, Sessions, 42)));
        Assert.Equal("amqp:invalid-field", await LitePeer.RefusalAsync(new Lite.SenderLink(_session, Name(), new LiteFraming.Target(), null)));

        await SendAsync(Plain, new Lite.Message("after nine refusals"));

        Assert.False(_session.IsClosed, _session.Error?.ToString());
        Assert.False(_connection.IsClosed, _connection.Error?.ToString());
        Assert.Equal(1, _emulator.GetMetrics()[Plain].ActiveMessages);
    }

    [Fact]
    public async Task An_attach_without_a_token_covering_its_entity_is_refused_with_unauthorized_access()
    {
        var connection = await LitePeer.ConnectAsync(_emulator);
        try
        {
            var session = new Lite.Session(connection);
            Assert.Equal(202, await LitePeer.PutTokenAsync(session, _emulator, Plain));

            var refused = await LitePeer.RefusalAsync(new Lite.SenderLink(session, Name(), Sessions));
            var allowed = new Lite.SenderLink(session, Name(), Plain);
            await allowed.SendAsync(new Lite.Message("covered"));

            Assert.Equal("amqp:unauthorized-access", refused);
            Assert.False(connection.IsClosed);
        }
        finally
        {
            await connection.CloseAsync();
        }
    }

    // ---- rejected deliveries ----

    [Fact]
    public async Task Rejected_sends_carry_not_allowed_decode_error_and_message_size_exceeded()
    {
        var toSessions = new Lite.SenderLink(_session, Name(), Sessions);
        var noSession = await Assert.ThrowsAsync<Lite.AmqpException>(() => toSessions.SendAsync(new Lite.Message("no session")));
        var toPlain = new Lite.SenderLink(_session, Name(), Plain);
        var garbage = new Lite.Message { BodySection = new LiteFraming.Data { Binary = [0xde, 0xad, 0xbe, 0xef] }, Format = 0x80013700 };
        var undecodable = await Assert.ThrowsAsync<Lite.AmqpException>(() => toPlain.SendAsync(garbage));
        await toPlain.SendAsync(new Lite.Message("the link carries on"));
        var tooLarge = new Lite.SenderLink(_session, Name(), Plain);
        var oversized = await Assert.ThrowsAsync<Lite.AmqpException>(() => tooLarge.SendAsync(new Lite.Message(new byte[300 * 1024])));

        Assert.Equal("amqp:not-allowed", noSession.Error.Condition.ToString());
        Assert.Contains("SessionId was not set", noSession.Error.Description, StringComparison.Ordinal);
        Assert.Equal("amqp:decode-error", undecodable.Error.Condition.ToString());
        Assert.Equal("amqp:link:message-size-exceeded", oversized.Error.Condition.ToString());
        Assert.Equal("amqp:link:message-size-exceeded", (await LitePeer.ClosedAsync(tooLarge))?.Condition.ToString());
        Assert.False(_session.IsClosed);
        Assert.Equal(1, _emulator.GetMetrics()[Plain].ActiveMessages);
        Assert.Equal(0, _emulator.GetMetrics()[Sessions].ActiveMessages);
    }

    // ---- management answers ----

    [Fact]
    public async Task Management_answers_refusals_with_their_status_code_and_condition()
    {
        var unknownToken = new LiteTypes.Map { ["lock-tokens"] = new[] { Guid.NewGuid() } };
        var unknownSequence = new LiteTypes.Map { ["sequence-numbers"] = new[] { 4711L }, ["receiver-settle-mode"] = 1u };
        var oversized = new Lite.Message(new byte[300 * 1024]).Encode();
        var schedule = new LiteTypes.Map
        {
            ["messages"] = new LiteTypes.List { new LiteTypes.Map { ["message"] = oversized.Buffer[oversized.Offset..(oversized.Offset + oversized.Length)], ["message-id"] = "big" } },
        };

        AssertAnswer(await ManagementAsync(Plain, "com.microsoft:no-such-operation"), 501, "amqp:not-implemented");
        AssertAnswer(await ManagementAsync(Plain, "com.microsoft:renew-lock", new LiteTypes.Map { ["lock-tokens"] = "not uuids" }), 400, "com.microsoft:argument-error");
        AssertAnswer(await ManagementAsync(Plain, "com.microsoft:renew-lock", unknownToken), 410, "com.microsoft:message-lock-lost");
        AssertAnswer(await ManagementAsync(Plain, "com.microsoft:update-disposition", new LiteTypes.Map { ["lock-tokens"] = new[] { Guid.NewGuid() }, ["disposition-status"] = "completed" }), 410, "com.microsoft:message-lock-lost");
        AssertAnswer(await ManagementAsync(Plain, "com.microsoft:receive-by-sequence-number", unknownSequence), 404, "com.microsoft:message-not-found");
        AssertAnswer(await ManagementAsync(Plain, "com.microsoft:cancel-scheduled-message", new LiteTypes.Map { ["sequence-numbers"] = new[] { 4711L } }), 404, "com.microsoft:message-not-found");
        AssertAnswer(await ManagementAsync(Plain, "com.microsoft:peek-message", new LiteTypes.Map { ["from-sequence-number"] = 1L, ["message-count"] = 5 }), 204, "com.microsoft:message-not-found");
        AssertAnswer(await ManagementAsync(Plain, "com.microsoft:schedule-message", schedule), 413, "amqp:link:message-size-exceeded");
        AssertAnswer(await ManagementAsync($"{Plain}/$DeadLetterQueue", "com.microsoft:schedule-message", new LiteTypes.Map { ["messages"] = new LiteTypes.List() }), 400, "amqp:not-allowed");
        AssertAnswer(await ManagementAsync(Plain, "com.microsoft:add-rule", new LiteTypes.Map { ["rule-name"] = "r" }), 400, "amqp:not-allowed");
        AssertAnswer(await ManagementAsync(Plain, "com.microsoft:renew-session-lock", new LiteTypes.Map { ["session-id"] = "s" }), 400, "amqp:not-allowed");
    }

    [Fact]
    public async Task Rule_management_answers_already_exists_argument_error_and_not_found()
    {
        static LiteTypes.Map Rule(string name, string sql) => new()
        {
            ["rule-name"] = name,
            ["rule-description"] = new LiteTypes.Map { ["sql-filter"] = new LiteTypes.Map { ["expression"] = sql } },
        };

        AssertAnswer(await ManagementAsync(PlainSubscription, "com.microsoft:add-rule", Rule("heavy", "weight > 10")), 200, null);
        AssertAnswer(await ManagementAsync(PlainSubscription, "com.microsoft:add-rule", Rule("HEAVY", "weight > 20")), 409, "com.microsoft:entity-already-exists");
        AssertAnswer(await ManagementAsync(PlainSubscription, "com.microsoft:add-rule", Rule("broken", "weight >")), 400, "com.microsoft:argument-error");
        AssertAnswer(await ManagementAsync(PlainSubscription, "com.microsoft:remove-rule", new LiteTypes.Map { ["rule-name"] = "nothing" }), 404, "amqp:not-found");
    }

    [Fact]
    public async Task Session_operations_need_the_session_lock_held_by_the_asking_connection()
    {
        await SendAsync(Sessions, InSession("held", "s-1"));
        var notHeld = new LiteTypes.Map { ["session-id"] = "s-1" };

        AssertAnswer(await ManagementAsync(Sessions, "com.microsoft:renew-session-lock", notHeld), 410, "com.microsoft:session-lock-lost");
        AssertAnswer(await ManagementAsync(Sessions, "com.microsoft:get-session-state", notHeld), 410, "com.microsoft:session-lock-lost");
        AssertAnswer(await ManagementAsync(Sessions, "com.microsoft:set-session-state", new LiteTypes.Map { ["session-id"] = "s-1", ["session-state"] = new byte[] { 1 } }), 410, "com.microsoft:session-lock-lost");
        AssertAnswer(await ManagementAsync(Sessions, "com.microsoft:update-disposition", new LiteTypes.Map { ["lock-tokens"] = new[] { Guid.NewGuid() }, ["disposition-status"] = "completed" }), 410, "com.microsoft:session-lock-lost");
        AssertAnswer(await ManagementAsync(Sessions, "com.microsoft:renew-lock", new LiteTypes.Map { ["lock-tokens"] = new[] { Guid.NewGuid() } }), 400, "amqp:not-allowed");
        AssertAnswer(await ManagementAsync(Sessions, "com.microsoft:renew-session-lock", []), 400, "com.microsoft:argument-error");
        var unscheduled = new Lite.Message("no session").Encode();
        AssertAnswer(await ManagementAsync(Sessions, "com.microsoft:schedule-message", new LiteTypes.Map
        {
            ["messages"] = new LiteTypes.List { new LiteTypes.Map { ["message"] = unscheduled.Buffer[unscheduled.Offset..(unscheduled.Offset + unscheduled.Length)], ["message-id"] = "m" } },
        }), 400, "amqp:not-allowed");

        // Held by this connection, the same requests succeed; another connection still may not.
        var holder = SessionReceiver(_session, Sessions, "s-1");
        holder.SetCredit(1, autoRestore: false);
        var message = await holder.ReceiveAsync(LitePeer.Bound);
        _time.Advance(TimeSpan.FromSeconds(10));
        var renewed = await ManagementAsync(Sessions, "com.microsoft:renew-session-lock", notHeld);
        AssertAnswer(await ManagementAsync(Sessions, "com.microsoft:set-session-state", new LiteTypes.Map { ["session-id"] = "s-1", ["session-state"] = new byte[] { 7 } }), 200, null);
        var state = await ManagementAsync(Sessions, "com.microsoft:get-session-state", notHeld);
        var (other, otherSession) = await ConnectAsync();
        var fromElsewhere = await LitePeer.ManagementAsync(otherSession, Sessions, "com.microsoft:renew-session-lock", notHeld);
        await other.CloseAsync();

        Assert.Equal("held", message.Body);
        AssertAnswer(renewed, 200, null);
        Assert.Equal((_time.GetUtcNow() + SessionScope.LockDuration).UtcDateTime, (DateTime)renewed.Body!["expiration"]);
        Assert.Equal(new byte[] { 7 }, (byte[])state.Body!["session-state"]);
        AssertAnswer(fromElsewhere, 410, "com.microsoft:session-lock-lost");
    }

    // ---- $cbs ----

    [Fact]
    public async Task Cbs_refuses_what_is_not_a_valid_token_for_the_audience_with_400_or_401()
    {
        var audience = LitePeer.Audience(_emulator, Plain);
        var valid = LitePeer.Token(_emulator, audience);

        var wrongOperation = await LitePeer.CbsAsync(_session, valid, audience, operation: "delete-token");
        var noAudience = await LitePeer.CbsAsync(_session, valid, audience: null);
        var jwt = await LitePeer.CbsAsync(_session, "eyJhbGciOiJIUzI1NiJ9.e30.c2lnbmF0dXJl", audience, type: "jwt");
        var notSas = await LitePeer.CbsAsync(_session, "not a token", audience);
        var wrongKey = await LitePeer.CbsAsync(_session, LitePeer.Token(_emulator, audience, key: "another-key"), audience);
        var expired = await LitePeer.CbsAsync(_session, LitePeer.Token(_emulator, audience, validFor: TimeSpan.FromHours(-1)), audience);
        var otherResource = await LitePeer.CbsAsync(_session, LitePeer.Token(_emulator, LitePeer.Audience(_emulator, Sessions)), audience);
        var accepted = await LitePeer.CbsAsync(_session, valid, audience);

        Assert.Equal(400, wrongOperation.Status);
        Assert.Equal(400, noAudience.Status);
        Assert.Equal((401, true), (jwt.Status, jwt.Description.Contains("JWT", StringComparison.Ordinal)));
        Assert.Equal((401, true), (notSas.Status, notSas.Description.Contains("not a shared access signature", StringComparison.Ordinal)));
        Assert.Equal((401, true), (wrongKey.Status, wrongKey.Description.StartsWith("InvalidSignature", StringComparison.Ordinal)));
        Assert.Equal((401, true), (expired.Status, expired.Description.StartsWith("ExpiredToken", StringComparison.Ordinal)));
        Assert.Equal((401, true), (otherResource.Status, otherResource.Description.Contains("does not cover", StringComparison.Ordinal)));
        Assert.Equal(202, accepted.Status);
    }

    // ---- sessions ----

    [Fact]
    public async Task A_session_receiver_gets_the_session_id_and_lock_in_its_attach_and_a_second_one_is_refused()
    {
        await SendAsync(Sessions, InSession("one", "s-2"));
        var answered = new TaskCompletionSource<LiteFraming.Attach>(TaskCreationOptions.RunContinuationsAsynchronously);

        var first = SessionReceiver(_session, Sessions, "s-2", onAttached: (_, attach) => answered.TrySetResult(attach));
        var attach = await answered.Task.WaitAsync(LitePeer.Bound);
        var second = await LitePeer.RefusalAsync(SessionReceiver(_session, Sessions, "s-2"));

        var source = Assert.IsType<LiteFraming.Source>(attach.Source);
        Assert.Equal("s-2", source.FilterSet[new LiteTypes.Symbol("com.microsoft:session-filter")]);
        Assert.Equal((_time.GetUtcNow() + SessionScope.LockDuration).UtcTicks, attach.Properties[new LiteTypes.Symbol("com.microsoft:locked-until-utc")]);
        Assert.Equal("com.microsoft:session-cannot-be-locked", second);
        Assert.False(first.IsClosed);
    }

    [Fact]
    public async Task Accept_next_session_waits_the_time_its_attach_asks_for_on_the_emulator_clock_then_refuses_with_timeout()
    {
        var waiting = SessionReceiver(_session, Sessions, sessionFilter: null, waitMilliseconds: 5000);

        // A $cbs round trip on the same connection is answered after the attach was handled: from here on it waits.
        await LitePeer.PutTokenAsync(_session, _emulator, Sessions);
        _time.Advance(TimeSpan.FromSeconds(4));
        await LitePeer.PutTokenAsync(_session, _emulator, Sessions);
        var stillWaiting = !waiting.IsClosed;
        _time.Advance(TimeSpan.FromSeconds(2));
        var refusal = await LitePeer.RefusalAsync(waiting);

        Assert.True(stillWaiting);
        Assert.Equal("com.microsoft:timeout", refusal);
        Assert.False(_session.IsClosed);
    }

    [Fact]
    public async Task A_session_whose_lock_expires_has_its_receiver_detached_with_session_lock_lost()
    {
        await SendAsync(Sessions, InSession("slow", "s-3"));
        var receiver = SessionReceiver(_session, Sessions, "s-3");
        receiver.SetCredit(1, autoRestore: false);
        var message = await receiver.ReceiveAsync(LitePeer.Bound);

        _time.Advance(SessionScope.LockDuration + TimeSpan.FromSeconds(1));
        var detached = await LitePeer.ClosedAsync(receiver);
        var renew = await ManagementAsync(Sessions, "com.microsoft:renew-session-lock", new LiteTypes.Map { ["session-id"] = "s-3" });

        Assert.Equal("slow", message.Body);
        Assert.Equal("com.microsoft:session-lock-lost", detached?.Condition.ToString());
        AssertAnswer(renew, 410, "com.microsoft:session-lock-lost");
        Assert.Equal(1, _emulator.GetMetrics()[Sessions].Counters.SessionLockExpirations);
    }

    [Fact]
    public async Task An_accept_next_session_the_client_gives_up_on_is_answered_and_takes_no_session()
    {
        var abandoned = SessionReceiver(_session, Sessions, sessionFilter: null, waitMilliseconds: 60_000);
        await LitePeer.PutTokenAsync(_session, _emulator, Sessions); // the attach is waiting
        await abandoned.CloseAsync(); // completes once the emulator answers with its attach and detach
        await SendAsync(Sessions, InSession("late", "s-4"));
        var answered = new TaskCompletionSource<LiteFraming.Attach>(TaskCreationOptions.RunContinuationsAsynchronously);
        var next = SessionReceiver(_session, Sessions, sessionFilter: null, waitMilliseconds: 60_000, onAttached: (_, attach) => answered.TrySetResult(attach));

        var attach = await answered.Task.WaitAsync(LitePeer.Bound);

        Assert.Equal("s-4", ((LiteFraming.Source)attach.Source).FilterSet[new LiteTypes.Symbol("com.microsoft:session-filter")]);
        Assert.False(next.IsClosed);
        Assert.False(_session.IsClosed);
    }

    // ---- connection and session errors, with raw frames ----

    [Fact]
    public async Task An_oversized_frame_closes_the_connection_with_framing_error()
    {
        await using var peer = await RawLitePeer.OpenAsync(_emulator);

        await peer.SendRawAsync([0, 0x10, 0, 0, 2, 0, 0, 0]); // 1 MiB, beyond the 256 KiB the emulator accepts

        Assert.Equal("amqp:connection:framing-error", (await peer.ClosedWithAsync())?.Condition.ToString());
    }

    [Fact]
    public async Task A_channel_beyond_channel_max_closes_the_connection_with_framing_error()
    {
        await using var peer = await RawLitePeer.OpenAsync(_emulator);

        await peer.SendAsync(9000, new LiteFraming.Begin { NextOutgoingId = 0, IncomingWindow = 10, OutgoingWindow = 10 });

        Assert.Equal("amqp:connection:framing-error", (await peer.ClosedWithAsync())?.Condition.ToString());
    }

    [Fact]
    public async Task An_undecodable_frame_closes_the_connection_with_decode_error()
    {
        await using var peer = await RawLitePeer.OpenAsync(_emulator);

        await peer.SendRawAsync([0, 0, 0, 12, 2, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef]);

        Assert.Equal("amqp:decode-error", (await peer.ClosedWithAsync())?.Condition.ToString());
    }

    [Fact]
    public async Task A_frame_on_a_channel_without_a_session_closes_the_connection_with_illegal_state()
    {
        await using var peer = await RawLitePeer.OpenAsync(_emulator);

        await peer.SendAsync(5, new LiteFraming.Flow { NextIncomingId = 0, IncomingWindow = 10, NextOutgoingId = 0, OutgoingWindow = 10 });

        Assert.Equal("amqp:illegal-state", (await peer.ClosedWithAsync())?.Condition.ToString());
    }

    [Fact]
    public async Task Frames_for_unattached_handles_end_that_session_with_unattached_handle_and_the_connection_carries_on()
    {
        await using var peer = await RawLitePeer.OpenAsync(_emulator);
        var flowChannel = await peer.BeginAsync(0);
        var transferChannel = await peer.BeginAsync(1);
        var detachChannel = await peer.BeginAsync(2);

        await peer.SendAsync(0, new LiteFraming.Flow { NextIncomingId = 0, IncomingWindow = 10, NextOutgoingId = 0, OutgoingWindow = 10, Handle = 7, DeliveryCount = 0, LinkCredit = 1 });
        var (flowEnded, flowEnd) = await peer.ExpectAsync<LiteFraming.End>();
        await peer.SendAsync(1, new LiteFraming.Transfer { Handle = 7, DeliveryId = 0, DeliveryTag = [1], MessageFormat = 0 }, [0x00, 0x53, 0x77, 0x40]);
        var (transferEnded, transferEnd) = await peer.ExpectAsync<LiteFraming.End>();
        await peer.SendAsync(2, new LiteFraming.Detach { Handle = 7, Closed = true });
        var (detachEnded, detachEnd) = await peer.ExpectAsync<LiteFraming.End>();
        await peer.SendAsync(0, new LiteFraming.End());
        await peer.BeginAsync(3); // the connection still serves new sessions

        Assert.Equal((flowChannel, "amqp:session:unattached-handle"), (flowEnded, flowEnd.Error?.Condition.ToString()));
        Assert.Equal((transferChannel, "amqp:session:unattached-handle"), (transferEnded, transferEnd.Error?.Condition.ToString()));
        Assert.Equal((detachChannel, "amqp:session:unattached-handle"), (detachEnded, detachEnd.Error?.Condition.ToString()));
    }

    [Fact]
    public async Task A_second_attach_on_a_handle_in_use_ends_the_session_with_handle_in_use()
    {
        await using var peer = await RawLitePeer.OpenAsync(_emulator);
        var channel = await peer.BeginAsync(0);
        var attach = new LiteFraming.Attach { LinkName = "cbs-sender", Handle = 0, Role = false, Source = new LiteFraming.Source(), Target = new LiteFraming.Target { Address = "$cbs" }, InitialDeliveryCount = 0 };

        await peer.SendAsync(0, attach);
        await peer.ExpectAsync<LiteFraming.Attach>();
        await peer.SendAsync(0, new LiteFraming.Attach { LinkName = "another", Handle = 0, Role = false, Source = new LiteFraming.Source(), Target = new LiteFraming.Target { Address = "$cbs" }, InitialDeliveryCount = 0 });
        var (ended, end) = await peer.ExpectAsync<LiteFraming.End>();

        Assert.Equal((channel, "amqp:session:handle-in-use"), (ended, end.Error?.Condition.ToString()));
    }

    [Fact]
    public async Task A_transfer_without_a_delivery_id_detaches_its_link_with_invalid_field_and_the_session_carries_on()
    {
        await using var peer = await RawLitePeer.OpenAsync(_emulator);
        await peer.BeginAsync(0);
        await peer.SendAsync(0, new LiteFraming.Attach { LinkName = "cbs-sender", Handle = 0, Role = false, Source = new LiteFraming.Source(), Target = new LiteFraming.Target { Address = "$cbs" }, InitialDeliveryCount = 0 });
        await peer.ExpectAsync<LiteFraming.Attach>();
        await peer.ExpectAsync<LiteFraming.Flow>(); // credit

        await peer.SendAsync(0, new LiteFraming.Transfer { Handle = 0, MessageFormat = 0 }, [0x00, 0x53, 0x77, 0x40]);
        var (_, detach) = await peer.ExpectAsync<LiteFraming.Detach>();
        await peer.SendAsync(0, new LiteFraming.Detach { Handle = 0, Closed = true });
        await peer.SendAsync(0, new LiteFraming.Attach { LinkName = "cbs-again", Handle = 1, Role = false, Source = new LiteFraming.Source(), Target = new LiteFraming.Target { Address = "$cbs" }, InitialDeliveryCount = 0 });
        var (_, again) = await peer.ExpectAsync<LiteFraming.Attach>();

        Assert.Equal("amqp:invalid-field", detach.Error?.Condition.ToString());
        Assert.Equal("cbs-again", again.LinkName);
    }

    [Fact]
    public async Task An_undecodable_request_to_a_node_is_rejected_with_decode_error_and_the_link_carries_on()
    {
        await using var peer = await RawLitePeer.OpenAsync(_emulator);
        await peer.BeginAsync(0);
        await peer.SendAsync(0, new LiteFraming.Attach { LinkName = "cbs-sender", Handle = 0, Role = false, Source = new LiteFraming.Source(), Target = new LiteFraming.Target { Address = "$cbs" }, InitialDeliveryCount = 0 });
        await peer.ExpectAsync<LiteFraming.Attach>();
        await peer.ExpectAsync<LiteFraming.Flow>();

        await peer.SendAsync(0, new LiteFraming.Transfer { Handle = 0, DeliveryId = 0, DeliveryTag = [1], MessageFormat = 0, Settled = false }, [0xde, 0xad, 0xbe, 0xef]);
        var (_, disposition) = await peer.ExpectAsync<LiteFraming.Dispose>();

        var rejected = Assert.IsType<LiteFraming.Rejected>(disposition.State);
        Assert.Equal("amqp:decode-error", rejected.Error?.Condition.ToString());
        Assert.True(disposition.Settled);
    }

    [Fact]
    public async Task Stopping_the_emulator_closes_its_connections_with_connection_forced()
    {
        var emulator = await ServiceBusEmulator.StartAsync(new ServiceBusEmulatorOptions { HttpPort = null });
        var connection = await LitePeer.ConnectAsync(emulator);
        var closed = LitePeer.ClosedAsync(connection);

        await emulator.DisposeAsync();

        Assert.Equal("amqp:connection:forced", (await closed)?.Condition.ToString());
    }

    // ---- the engine's own clocks (the emulator's connections run on the system clock, so a bare listener is used) ----

    [Fact]
    public async Task A_peer_silent_for_longer_than_the_idle_time_out_is_closed_with_resource_limit_exceeded()
    {
        // An hour-long time-out: AMQPNetLite's own heartbeats (on the real clock, at half the half advertised) never
        // come during the test, and only the listener's fake clock decides.
        var time = new FakeTimeProvider();
        await using var listener = BareListener(new AmqpConnectionOptions { IdleTimeout = TimeSpan.FromHours(1), TimeProvider = time });
        var connection = await Lite.Connection.Factory.CreateAsync(new Lite.Address($"amqp://127.0.0.1:{listener.EndPoint.Port}"));
        var closed = LitePeer.ClosedAsync(connection);
        Assert.True(await DroneDelivery.TestSupport.Eventually.TrueAsync(() => listener.Connections.Count == 1, LitePeer.Bound));

        time.Advance(TimeSpan.FromMinutes(61)); // heartbeat checks run inside Advance

        Assert.Equal("amqp:resource-limit-exceeded", (await closed)?.Condition.ToString());
    }

    [Fact]
    public async Task A_refused_link_whose_detach_never_comes_frees_its_handle_after_the_bound_and_a_late_detach_ends_only_its_session()
    {
        var time = new FakeTimeProvider();
        await using var listener = BareListener(new AmqpConnectionOptions { RefusedLinkTimeout = TimeSpan.FromSeconds(30), TimeProvider = time });
        await using var peer = await RawLitePeer.OpenAsync(listener.EndPoint.Port);
        var channel = await peer.BeginAsync(0);
        await peer.SendAsync(0, new LiteFraming.Attach { LinkName = "refused", Handle = 0, Role = false, Source = new LiteFraming.Source(), Target = new LiteFraming.Target { Address = "nowhere" }, InitialDeliveryCount = 0 });
        await peer.ExpectAsync<LiteFraming.Attach>();
        var (_, refusal) = await peer.ExpectAsync<LiteFraming.Detach>();

        time.Advance(TimeSpan.FromSeconds(31));
        await peer.SendAsync(0, new LiteFraming.Detach { Handle = 0, Closed = true });
        var (ended, end) = await peer.ExpectAsync<LiteFraming.End>();
        await peer.SendAsync(0, new LiteFraming.End());
        await peer.BeginAsync(1);

        Assert.Equal("amqp:not-found", refusal.Error?.Condition.ToString());
        Assert.Equal((channel, "amqp:session:unattached-handle"), (ended, end.Error?.Condition.ToString()));
    }

    [Fact]
    public async Task A_handler_failing_on_an_attach_refuses_that_link_and_one_failing_on_a_message_ends_its_connection_with_internal_error()
    {
        // Only a defect in the broker's own code gets here; the engine contains it to the link, or to the connection.
        await using var listener = BareListener(new AmqpConnectionOptions(), new Faulty());
        var connection = await Lite.Connection.Factory.CreateAsync(new Lite.Address($"amqp://127.0.0.1:{listener.EndPoint.Port}"));
        var session = new Lite.Session(connection);
        var closed = LitePeer.ClosedAsync(connection);

        var refused = await LitePeer.RefusalAsync(new Lite.SenderLink(session, Name(), "fails-on-attach"));
        var sender = new Lite.SenderLink(session, Name(), "fails-on-message");
        _ = sender.SendAsync(new Lite.Message("boom"));

        Assert.Equal("amqp:internal-error", refused);
        Assert.Equal("amqp:internal-error", (await closed)?.Condition.ToString());
    }

    private static AmqpListener BareListener(AmqpConnectionOptions connection, IAmqpLinkHandler? handler = null) => AmqpListener.Start(new System.Net.IPEndPoint(System.Net.IPAddress.Loopback, 0), new AmqpListenerOptions
    {
        Connection = connection,
        SaslMechanisms = [],
        RequireSasl = false,
        HandlerFactory = _ => handler ?? new RefuseAll(),
    });

    private sealed class RefuseAll : IAmqpLinkHandler
    {
        public void OnAttach(AmqpLink link) => link.Reject(new DroneDelivery.Emulators.ServiceBus.Amqp.Framing.Error { Condition = DroneDelivery.Emulators.ServiceBus.Amqp.Framing.ErrorCondition.NotFound, Description = "Nothing here." });
    }

    private sealed class Faulty : IAmqpLinkHandler
    {
        public void OnAttach(AmqpLink link)
        {
            if (link.RemoteAttach?.Target?.Address == "fails-on-attach")
            {
                throw new InvalidOperationException("a defect on attach");
            }

            var receiver = (ReceiverLink)link;
            receiver.OnMessage = (_, _) => throw new InvalidOperationException("a defect on a message");
            receiver.Accept();
            receiver.SetCredit(10);
        }
    }
}
