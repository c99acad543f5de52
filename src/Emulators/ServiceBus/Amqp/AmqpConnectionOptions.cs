using System.Net.Security;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;

namespace DroneDelivery.Emulators.ServiceBus.Amqp;

/// <summary>Settings of one AMQP connection (both roles).</summary>
public sealed record AmqpConnectionOptions
{
    public string ContainerId { get; init; } = Guid.NewGuid().ToString("N");

    /// <summary>The host name sent in open (and used for TLS server name indication).</summary>
    public string? HostName { get; init; }

    /// <summary>Largest frame this side accepts, in bytes (minimum 512).</summary>
    public uint MaxFrameSize { get; init; } = 64 * 1024;

    public ushort ChannelMax { get; init; } = 8191;

    /// <summary>
    /// How long this side waits without hearing from the peer before closing; zero disables. Half of it
    /// is advertised in open, as the specification recommends, so the peer's heartbeats come early.
    /// </summary>
    public TimeSpan IdleTimeout { get; init; } = TimeSpan.FromMinutes(1);

    /// <summary>Client side: the SASL mechanism to negotiate, or null to skip the SASL layer.</summary>
    public SaslProfile? Sasl { get; init; }

    /// <summary>Client side: wrap the socket in TLS (amqps).</summary>
    public bool UseTls { get; init; }

    public RemoteCertificateValidationCallback? CertificateValidation { get; init; }

    /// <summary>Incoming window of each session, in transfer frames.</summary>
    public uint SessionWindow { get; init; } = 5000;

    public Dictionary<object, object?>? Properties { get; init; }

    /// <summary>Handles links the peer attaches. Without one, peer-initiated links are refused.</summary>
    public IAmqpLinkHandler? LinkHandler { get; init; }

    /// <summary>How long open, begin, attach and close wait for the peer.</summary>
    public TimeSpan OperationTimeout { get; init; } = TimeSpan.FromSeconds(60);

    /// <summary>
    /// How long a link this side refused keeps its handle for the peer's answering detach (timed on
    /// <see cref="TimeProvider"/>). A peer that never answers would otherwise hold the handle for the life of
    /// its session; once this has passed the handle is free, and a detach that still comes ends that session
    /// only (unattached-handle). Default 1 min.
    /// </summary>
    public TimeSpan RefusedLinkTimeout { get; init; } = TimeSpan.FromMinutes(1);

    /// <summary>
    /// The clock that times heartbeats, the idle time-out, receive waits (<see cref="ReceiverLink.ReceiveAsync"/>) and
    /// how long a refused link keeps its handle (<see cref="RefusedLinkTimeout"/>).
    /// Production uses <see cref="TimeProvider.System"/>; tests and hosts may pass their own (a fake clock they move).
    /// <see cref="OperationTimeout"/> and the grace periods of close, end and detach only bound waits for an
    /// unresponsive peer and stay on the system clock, so a fake clock that is never moved cannot hang them.
    /// </summary>
    public TimeProvider TimeProvider { get; init; } = TimeProvider.System;

    /// <summary>When set, holds the connection's traffic while the gate is held (a broker that stops answering).</summary>
    public TrafficGate? Gate { get; init; }
}

/// <summary>Decides on links the peer attaches (the listener role, or callbacks on a client).</summary>
public interface IAmqpLinkHandler
{
    /// <summary>
    /// Called on the connection's reader when the peer attaches a link. Call <see cref="AmqpLink.Accept"/> or
    /// <see cref="AmqpLink.Reject"/> (now or later) and subscribe to the link's events.
    /// </summary>
    void OnAttach(AmqpLink link);
}

/// <summary>Settings of a listener: connection settings plus the SASL mechanisms it offers.</summary>
public sealed record AmqpListenerOptions
{
    public AmqpConnectionOptions Connection { get; init; } = new();

    /// <summary>Mechanisms offered; empty allows only clients that skip SASL.</summary>
    public IReadOnlyList<SaslMechanism> SaslMechanisms { get; init; } = [SaslMechanism.Anonymous];

    /// <summary>When true, a client that skips the SASL layer is refused.</summary>
    public bool RequireSasl { get; init; } = true;

    /// <summary>Creates the handler for links attached over one accepted connection.</summary>
    public required Func<AmqpConnection, IAmqpLinkHandler> HandlerFactory { get; init; }

    /// <summary>Called when a connection ends with an error (malformed input, idle time-out...).</summary>
    public Action<AmqpConnection, Error>? ConnectionFailed { get; init; }
}
