using System.IO.Pipelines;
using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Threading.Channels;
using DroneDelivery.Emulators.ServiceBus.Amqp.Codec;
using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;

namespace DroneDelivery.Emulators.ServiceBus.Amqp;

/// <summary>
/// One AMQP 1.0 connection, in either role. Frames are read by one reader loop and written by one
/// writer loop that sends everything queued since its last write in a single socket write. All protocol
/// state is guarded by <see cref="Sync"/>; application callbacks run on the reader loop, outside that lock.
/// </summary>
public sealed partial class AmqpConnection : IAsyncDisposable
{
    internal const int FrameHeaderSize = 8;
    private const uint MinMaxFrameSize = 512;
    private static readonly byte[] AmqpHeader = [(byte)'A', (byte)'M', (byte)'Q', (byte)'P', 0, 1, 0, 0];
    private static readonly byte[] SaslHeader = [(byte)'A', (byte)'M', (byte)'Q', (byte)'P', 3, 1, 0, 0];

    internal readonly Lock Sync = new();
    private readonly Stream _stream;
    private readonly PipeReader _input;
    private readonly Channel<bool> _writeSignal = Channel.CreateBounded<bool>(new BoundedChannelOptions(1) { FullMode = BoundedChannelFullMode.DropWrite });
    private readonly Dictionary<ushort, AmqpSession> _localSessions = [];
    private readonly Dictionary<ushort, AmqpSession> _remoteSessions = [];
    private readonly TaskCompletionSource _opened = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly TaskCompletionSource _closed = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private ByteBuffer _pending = new(4096);
    private ByteBuffer _writing = new(4096);
    private bool _openSent;
    private bool _closeSent;
    private bool _terminated;
    private long _lastReceived;
    private long _lastSent;
    private long _heartbeatsReceived;
    private ITimer? _heartbeat;
    private Task _writerTask = Task.CompletedTask;

    private AmqpConnection(Stream stream, AmqpConnectionOptions options, bool isListenerSide, EndPoint? remoteEndPoint)
    {
        _stream = stream;
        _input = PipeReader.Create(stream, new StreamPipeReaderOptions(bufferSize: 65536, minimumReadSize: 16384));
        Options = options;
        _lastReceived = _lastSent = options.TimeProvider.GetTimestamp();
        IsListenerSide = isListenerSide;
        RemoteEndPoint = remoteEndPoint;
    }

    public AmqpConnectionOptions Options { get; }

    public bool IsListenerSide { get; }

    public EndPoint? RemoteEndPoint { get; }

    /// <summary>The peer's open performative, once received.</summary>
    public Open? RemoteOpen { get; private set; }

    /// <summary>The SASL mechanism the client chose (listener side), if any.</summary>
    public string? SaslMechanism { get; private set; }

    /// <summary>The error the connection ended with (ours or the peer's), if any.</summary>
    public Error? Error { get; private set; }

    public bool IsClosed => _closed.Task.IsCompleted;

    /// <summary>Completes when the connection has ended, however it ended.</summary>
    public Task Completion => _closed.Task;

    /// <summary>Application state attached to the connection (e.g. authorisations granted over CBS).</summary>
    public object? Context { get; set; }

    /// <summary>Empty frames (heartbeats) received from the peer so far.</summary>
    internal long HeartbeatsReceived => Interlocked.Read(ref _heartbeatsReceived);

    /// <summary>Largest frame the peer accepts.</summary>
    internal uint RemoteMaxFrameSize { get; private set; } = MinMaxFrameSize;

    /// <summary>Raised once when the connection ends, with the error if any.</summary>
    public event Action<AmqpConnection, Error?>? Closed;

    /// <summary>Opens a client connection: TCP (optionally TLS), SASL if configured, then the AMQP open exchange.</summary>
    public static async Task<AmqpConnection> ConnectAsync(string host, int port, AmqpConnectionOptions options, CancellationToken cancellationToken = default)
    {
        var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        Stream stream;
        try
        {
            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            timeout.CancelAfter(options.OperationTimeout);
            await socket.ConnectAsync(host, port, timeout.Token).ConfigureAwait(false);
            stream = new NetworkStream(socket, ownsSocket: true);
            if (options.UseTls)
            {
                var ssl = new SslStream(stream, leaveInnerStreamOpen: false, options.CertificateValidation);
                await ssl.AuthenticateAsClientAsync(new SslClientAuthenticationOptions { TargetHost = options.HostName ?? host }, timeout.Token).ConfigureAwait(false);
                stream = ssl;
            }
        }
        catch
        {
            socket.Dispose();
            throw;
        }

        var connection = new AmqpConnection(stream, options, isListenerSide: false, socket.RemoteEndPoint);
        try
        {
            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            timeout.CancelAfter(options.OperationTimeout);
            if (options.Sasl is not null)
            {
                await connection.NegotiateSaslAsClientAsync(options.Sasl, timeout.Token).ConfigureAwait(false);
            }

            await stream.WriteAsync(AmqpHeader, timeout.Token).ConfigureAwait(false);
            connection.SendOpen();
            connection.StartWriter();
            await connection.ExpectHeaderAsync(AmqpHeader, timeout.Token).ConfigureAwait(false);
            connection.StartReader();
            await connection._opened.Task.WaitAsync(timeout.Token).ConfigureAwait(false);
            return connection;
        }
        catch (Exception e)
        {
            connection.Terminate(new Error { Condition = ErrorCondition.ConnectionForced, Description = e.Message });
            await connection.DisposeTransportAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>Listener side: runs the protocol-header and SASL exchange on an accepted socket, then serves the connection.</summary>
    internal static async Task<AmqpConnection?> AcceptAsync(Socket socket, AmqpListenerOptions options, CancellationToken cancellationToken)
    {
        socket.NoDelay = true;
        var stream = new NetworkStream(socket, ownsSocket: true);
        var connection = new AmqpConnection(stream, options.Connection, isListenerSide: true, socket.RemoteEndPoint);
        connection.LinkHandler = options.HandlerFactory(connection);
        try
        {
            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            timeout.CancelAfter(options.Connection.OperationTimeout);
            var header = await connection.ReadExactAsync(8, timeout.Token).ConfigureAwait(false);
            if (header.AsSpan().SequenceEqual(SaslHeader) && options.SaslMechanisms.Count > 0)
            {
                await stream.WriteAsync(SaslHeader, timeout.Token).ConfigureAwait(false);
                if (!await connection.NegotiateSaslAsListenerAsync(options.SaslMechanisms, timeout.Token).ConfigureAwait(false))
                {
                    await connection.DisposeTransportAsync().ConfigureAwait(false);
                    return null;
                }

                header = await connection.ReadExactAsync(8, timeout.Token).ConfigureAwait(false);
            }
            else if (header.AsSpan().SequenceEqual(AmqpHeader) && options.RequireSasl)
            {
                await stream.WriteAsync(SaslHeader, timeout.Token).ConfigureAwait(false);
                await connection.DisposeTransportAsync().ConfigureAwait(false);
                return null;
            }

            if (!header.AsSpan().SequenceEqual(AmqpHeader))
            {
                await stream.WriteAsync(options.RequireSasl ? SaslHeader : AmqpHeader, timeout.Token).ConfigureAwait(false);
                await connection.DisposeTransportAsync().ConfigureAwait(false);
                return null;
            }

            await stream.WriteAsync(AmqpHeader, timeout.Token).ConfigureAwait(false);
            connection.StartWriter();
            connection.StartReader();
            await connection._opened.Task.WaitAsync(timeout.Token).ConfigureAwait(false);
            return connection;
        }
        catch (Exception e) when (e is IOException or OperationCanceledException or AmqpDecodeException or AmqpException or SocketException or ObjectDisposedException)
        {
            connection.Terminate(new Error { Condition = ErrorCondition.ConnectionForced, Description = e.Message });
            // Reported before the transport closes: a peer that sees the connection end finds it reported.
            if (connection.Error is { } error && error.Condition != ErrorCondition.ConnectionForced)
            {
                options.ConnectionFailed?.Invoke(connection, error);
            }

            await connection.DisposeTransportAsync().ConfigureAwait(false);
            return null;
        }
    }

    internal IAmqpLinkHandler? LinkHandler { get; private set; }

    /// <summary>Begins a session on a free channel.</summary>
    public async Task<AmqpSession> BeginSessionAsync(CancellationToken cancellationToken = default)
    {
        AmqpSession session;
        lock (Sync)
        {
            ThrowIfClosed();
            ushort channel = 0;
            while (_localSessions.ContainsKey(channel))
            {
                if (channel >= Math.Min(Options.ChannelMax, RemoteOpen?.ChannelMax ?? ushort.MaxValue))
                {
                    throw new AmqpException(ErrorCondition.ResourceLimitExceeded, "No free channel for a new session.");
                }

                channel++;
            }

            session = new AmqpSession(this, channel);
            _localSessions[channel] = session;
            session.SendBegin(remoteChannel: null);
        }

        await session.WaitBegunAsync(cancellationToken).ConfigureAwait(false);
        return session;
    }

    /// <summary>Closes the connection (sends close and waits briefly for the peer's close).</summary>
    public async Task CloseAsync(Error? error = null, CancellationToken cancellationToken = default)
    {
        lock (Sync)
        {
            if (!_closeSent && !_terminated)
            {
                _closeSent = true;
                WriteFrame(0, new Close { Error = error });
            }
        }

        try
        {
            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            timeout.CancelAfter(TimeSpan.FromSeconds(5));
            await _closed.Task.WaitAsync(timeout.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            Terminate(error);
        }

        await DisposeTransportAsync().ConfigureAwait(false);
    }

    public async ValueTask DisposeAsync() => await CloseAsync().ConfigureAwait(false);

    /// <summary>
    /// Ends the connection by dropping its transport, without a close frame and without flushing what is queued (the
    /// socket is reset): what the peer sees when the network or the process behind the connection fails.
    /// </summary>
    public void Abort()
    {
        if (_stream is NetworkStream { Socket: var socket })
        {
            try
            {
                socket.LingerState = new LingerOption(true, 0);
            }
            catch (Exception e) when (e is SocketException or ObjectDisposedException)
            {
                // Already gone.
            }
        }

        try
        {
            _stream.Dispose();
        }
        catch (Exception e) when (e is IOException or SocketException or ObjectDisposedException)
        {
        }

        Terminate(new Error { Condition = ErrorCondition.ConnectionForced, Description = "The transport was dropped." });
    }

    /// <summary>Ends the connection at once with <paramref name="error"/> (sent to the peer if the transport still works).</summary>
    public void Fail(Error error)
    {
        lock (Sync)
        {
            if (!_closeSent && !_terminated)
            {
                _closeSent = true;
                WriteFrame(0, new Close { Error = error });
            }
        }

        Terminate(error);
    }

    internal void ThrowIfClosed()
    {
        if (_terminated || _closeSent)
        {
            throw new AmqpException(Error ?? new Error { Condition = ErrorCondition.ConnectionForced, Description = "The connection is closed." });
        }
    }

    internal void RemoveSession(AmqpSession session)
    {
        lock (Sync)
        {
            _localSessions.Remove(session.LocalChannel);
            if (session.RemoteChannel is { } remote)
            {
                _remoteSessions.Remove(remote);
            }
        }
    }

    private void SendOpen()
    {
        _openSent = true;
        // The specification asks a peer to advertise half of its real threshold, so that heartbeats
        // sent at half the advertised value leave a wide margin for a busy or paused process.
        var idle = Options.IdleTimeout > TimeSpan.Zero ? (uint)Math.Max(1, Options.IdleTimeout.TotalMilliseconds / 2) : (uint?)null;
        WriteFrame(0, new Open
        {
            ContainerId = Options.ContainerId,
            HostName = IsListenerSide ? null : Options.HostName,
            MaxFrameSize = Math.Max(MinMaxFrameSize, Options.MaxFrameSize),
            ChannelMax = Options.ChannelMax,
            IdleTimeOut = idle,
            Properties = Options.Properties,
        });
    }

    private void OnOpen(Open open)
    {
        if (RemoteOpen is not null)
        {
            throw new AmqpException(ErrorCondition.IllegalState, "Open received twice.");
        }

        lock (Sync)
        {
            RemoteOpen = open;
            RemoteMaxFrameSize = Math.Max(MinMaxFrameSize, open.MaxFrameSize);
            var tick = HeartbeatTick(); // the peer's idle time-out may ask for a faster beat
            _heartbeat?.Change(tick, tick);
            if (!_openSent)
            {
                SendOpen();
            }
        }

        _opened.TrySetResult();
    }

    private void OnBegin(ushort channel, Begin begin)
    {
        AmqpSession session;
        lock (Sync)
        {
            if (_remoteSessions.ContainsKey(channel))
            {
                throw new AmqpException(ErrorCondition.IllegalState, $"Channel {channel} already has a session.");
            }

            if (begin.RemoteChannel is { } local)
            {
                if (!_localSessions.TryGetValue(local, out session!))
                {
                    throw new AmqpException(ErrorCondition.IllegalState, $"Begin answers channel {local}, which has no pending session.");
                }
            }
            else
            {
                if (_closeSent)
                {
                    return;
                }

                ushort free = 0;
                while (_localSessions.ContainsKey(free))
                {
                    if (free >= Options.ChannelMax)
                    {
                        throw new AmqpException(ErrorCondition.ResourceLimitExceeded, "No free channel for the peer's session.");
                    }

                    free++;
                }

                session = new AmqpSession(this, free);
                _localSessions[free] = session;
            }

            _remoteSessions[channel] = session;
        }

        session.OnBegin(channel, begin);
    }

    private void OnClose(Close close)
    {
        lock (Sync)
        {
            if (!_closeSent)
            {
                _closeSent = true;
                WriteFrame(0, new Close());
            }
        }

        Terminate(close.Error);
    }

    /// <summary>Marks the connection ended, fails everything pending and lets the writer drain and stop.</summary>
    private void Terminate(Error? error)
    {
        AmqpSession[] sessions;
        lock (Sync)
        {
            if (_terminated)
            {
                return;
            }

            _terminated = true;
            Error ??= error;
            _heartbeat?.Dispose();
            _heartbeat = null;
            sessions = [.. _localSessions.Values];
            _localSessions.Clear();
            _remoteSessions.Clear();
        }

        _writeSignal.Writer.TryComplete();
        _opened.TrySetException(new AmqpException(error ?? new Error { Condition = ErrorCondition.ConnectionForced, Description = "The connection closed." }));
        foreach (var session in sessions)
        {
            session.OnConnectionClosed(error);
        }

        _ = Task.Run(async () =>
        {
            await DisposeTransportAsync().ConfigureAwait(false);
            _closed.TrySetResult();
            Closed?.Invoke(this, error);
        });
    }

    private int _transportDisposed;

    private async Task DisposeTransportAsync()
    {
        _writeSignal.Writer.TryComplete();
        try
        {
            await _writerTask.WaitAsync(TimeSpan.FromSeconds(2)).ConfigureAwait(false);
        }
        catch (Exception e) when (e is TimeoutException or IOException or ObjectDisposedException)
        {
        }

        if (Interlocked.Exchange(ref _transportDisposed, 1) == 1)
        {
            return;
        }

        try
        {
            await _stream.DisposeAsync().ConfigureAwait(false);
        }
        catch (Exception e) when (e is IOException or ObjectDisposedException or SocketException)
        {
        }

        lock (Sync)
        {
            _pending.Dispose();
            _writing.Dispose();
        }
    }
}
