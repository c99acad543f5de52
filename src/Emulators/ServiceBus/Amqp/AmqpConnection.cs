using System.Buffers;
using System.Buffers.Binary;
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
public sealed class AmqpConnection : IAsyncDisposable
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
            await connection.DisposeTransportAsync().ConfigureAwait(false);
            if (connection.Error is { } error && error.Condition != ErrorCondition.ConnectionForced)
            {
                options.ConnectionFailed?.Invoke(connection, error);
            }

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

    /// <summary>Queues one frame for the writer; the caller holds <see cref="Sync"/> or accepts interleaving at frame level.</summary>
    internal void WriteFrame(ushort channel, Performative? performative, ReadOnlySpan<byte> payload = default, byte frameType = 0)
    {
        lock (Sync)
        {
            if (_terminated)
            {
                return;
            }

            var start = _pending.Reserve(FrameHeaderSize);
            try
            {
                performative?.Encode(_pending);
            }
            catch
            {
                // A value that cannot be encoded must not leave half a frame in the outgoing stream.
                _pending.Truncate(start);
                throw;
            }

            _pending.Write(payload);
            var header = _pending.WrittenRange(start, FrameHeaderSize);
            BinaryPrimitives.WriteUInt32BigEndian(header, (uint)(_pending.Length - start));
            header[4] = 2;
            header[5] = frameType;
            BinaryPrimitives.WriteUInt16BigEndian(header[6..], channel);
        }

        _writeSignal.Writer.TryWrite(true);
    }

    /// <summary>Writes a transfer frame whose payload is as much of <paramref name="payload"/> as fits; returns the bytes taken.</summary>
    internal int WriteTransferFrame(ushort channel, Transfer transfer, ReadOnlySpan<byte> payload, Func<Transfer, Transfer> asPartial)
    {
        lock (Sync)
        {
            if (_terminated)
            {
                return payload.Length;
            }

            var start = _pending.Reserve(FrameHeaderSize);
            try
            {
                transfer.Encode(_pending);
            }
            catch
            {
                _pending.Truncate(start);
                throw;
            }

            var room = (int)Math.Min(int.MaxValue, RemoteMaxFrameSize) - (_pending.Length - start);
            if (payload.Length > room)
            {
                _pending.Truncate(start + FrameHeaderSize);
                asPartial(transfer).Encode(_pending);
                room = (int)Math.Min(int.MaxValue, RemoteMaxFrameSize) - (_pending.Length - start);
                if (room <= 0)
                {
                    throw new AmqpException(ErrorCondition.FrameSizeTooSmall, "The peer's max-frame-size cannot hold a transfer.");
                }
            }

            var taken = Math.Min(room, payload.Length);
            _pending.Write(payload[..taken]);
            var header = _pending.WrittenRange(start, FrameHeaderSize);
            BinaryPrimitives.WriteUInt32BigEndian(header, (uint)(_pending.Length - start));
            header[4] = 2;
            header[5] = 0;
            BinaryPrimitives.WriteUInt16BigEndian(header[6..], channel);
            _writeSignal.Writer.TryWrite(true);
            return taken;
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

    private void StartWriter() => _writerTask = Task.Run(WriteLoopAsync);

    private void StartReader()
    {
        _ = Task.Run(ReadLoopAsync);
        lock (Sync)
        {
            if (!_terminated)
            {
                var tick = HeartbeatTick();
                _heartbeat = Options.TimeProvider.CreateTimer(static state => ((AmqpConnection)state!).OnHeartbeatTick(), this, tick, tick);
            }
        }
    }

    private async Task WriteLoopAsync()
    {
        try
        {
            while (await _writeSignal.Reader.WaitToReadAsync().ConfigureAwait(false))
            {
                _writeSignal.Reader.TryRead(out _);
                await PassGateAsync().ConfigureAwait(false);
                await FlushPendingAsync().ConfigureAwait(false);
            }

            await FlushPendingAsync().ConfigureAwait(false);
        }
        catch (Exception e) when (e is IOException or ObjectDisposedException or SocketException or InvalidOperationException or NotSupportedException)
        {
            Terminate(new Error { Condition = ErrorCondition.ConnectionForced, Description = "The transport failed: " + e.Message });
        }
    }

    /// <summary>Waits while <see cref="AmqpConnectionOptions.Gate"/> holds traffic.</summary>
    private Task PassGateAsync() => Options.Gate?.WaitAsync() ?? Task.CompletedTask;

    private async Task FlushPendingAsync()
    {
        ByteBuffer toWrite;
        lock (Sync)
        {
            if (_pending.Length == 0)
            {
                return;
            }

            (_pending, _writing) = (_writing, _pending);
            toWrite = _writing;
            Volatile.Write(ref _lastSent, Options.TimeProvider.GetTimestamp());
        }

        await _stream.WriteAsync(toWrite.WrittenMemory).ConfigureAwait(false);
        toWrite.Clear();
    }

    /// <summary>
    /// Runs on the connection's clock every <see cref="HeartbeatTick"/>: closes the connection when nothing arrived
    /// within our idle time-out, and sends an empty frame when nothing went out for half of the peer's.
    /// </summary>
    private void OnHeartbeatTick()
    {
        try
        {
            if (_terminated)
            {
                return;
            }

            var time = Options.TimeProvider;
            var now = time.GetTimestamp();
            if (Options.IdleTimeout > TimeSpan.Zero && RemoteOpen is not null &&
                time.GetElapsedTime(Volatile.Read(ref _lastReceived), now) > Options.IdleTimeout)
            {
                Fail(new Error { Condition = ErrorCondition.ResourceLimitExceeded, Description = $"Nothing received for {Options.IdleTimeout.TotalSeconds:0.#} s (idle time-out)." });
                return;
            }

            var remoteIdle = RemoteOpen?.IdleTimeOut ?? 0;
            if (remoteIdle > 0 && time.GetElapsedTime(Volatile.Read(ref _lastSent), now) > TimeSpan.FromMilliseconds(remoteIdle / 2.0))
            {
                WriteFrame(0, null);
                Volatile.Write(ref _lastSent, now);
            }
        }
        catch (Exception e) when (e is not OutOfMemoryException)
        {
            // A timer callback must not take the process down; the connection's own paths report its failures.
            System.Diagnostics.Trace.TraceError($"AMQP heartbeat failed: {e}");
        }
    }

    /// <summary>
    /// How often the idle check runs: a quarter of the shorter of our threshold and the peer's, so an
    /// empty frame never goes out later than the peer expects even when its time-out is much shorter.
    /// </summary>
    private TimeSpan HeartbeatTick()
    {
        var shortest = 4000.0;
        if (Options.IdleTimeout > TimeSpan.Zero)
        {
            shortest = Math.Min(shortest, Options.IdleTimeout.TotalMilliseconds);
        }

        if (RemoteOpen?.IdleTimeOut is > 0 and var remote)
        {
            shortest = Math.Min(shortest, remote);
        }

        return TimeSpan.FromMilliseconds(Math.Max(10, shortest / 4));
    }

    private async Task ReadLoopAsync()
    {
        Error? error = null;
        try
        {
            while (true)
            {
                var result = await _input.ReadAsync().ConfigureAwait(false);
                var buffer = result.Buffer;
                while (TryReadFrame(ref buffer, out var frame, out var rented))
                {
                    try
                    {
                        Volatile.Write(ref _lastReceived, Options.TimeProvider.GetTimestamp());
                        await PassGateAsync().ConfigureAwait(false);
                        ProcessFrame(frame.Span);
                    }
                    finally
                    {
                        if (rented is not null)
                        {
                            ArrayPool<byte>.Shared.Return(rented);
                        }
                    }
                }

                _input.AdvanceTo(buffer.Start, buffer.End);
                if (result.IsCompleted || _terminated)
                {
                    break;
                }
            }

            if (!_terminated)
            {
                error = new Error { Condition = ErrorCondition.ConnectionForced, Description = "The peer closed the transport without closing the connection." };
            }
        }
        catch (AmqpDecodeException e)
        {
            error = new Error { Condition = ErrorCondition.DecodeError, Description = e.Message };
            Fail(error);
        }
        catch (AmqpException e)
        {
            error = e.Error;
            Fail(error);
        }
        catch (Exception e) when (e is IOException or ObjectDisposedException or SocketException or OperationCanceledException)
        {
            error = _terminated ? null : new Error { Condition = ErrorCondition.ConnectionForced, Description = "The transport failed: " + e.Message };
        }
        catch (Exception e) when (e is not OutOfMemoryException)
        {
            // A failure in a handler (or a bug) ends this connection only, never the process or other connections.
            error = new Error { Condition = ErrorCondition.InternalError, Description = $"{e.GetType().Name}: {e.Message}" };
            Fail(error);
        }

        Terminate(error);
        await DisposeTransportAsync().ConfigureAwait(false);
    }

    private bool TryReadFrame(ref ReadOnlySequence<byte> buffer, out ReadOnlyMemory<byte> frame, out byte[]? rented)
    {
        frame = default;
        rented = null;
        if (buffer.Length < 4)
        {
            return false;
        }

        Span<byte> sizeBytes = stackalloc byte[4];
        buffer.Slice(0, 4).CopyTo(sizeBytes);
        var size = BinaryPrimitives.ReadUInt32BigEndian(sizeBytes);
        var limit = Math.Max(MinMaxFrameSize, Options.MaxFrameSize);
        if (size < FrameHeaderSize || size > limit)
        {
            throw new AmqpException(ErrorCondition.FramingError, $"Frame size {size} is outside 8..{limit} bytes.");
        }

        if (buffer.Length < size)
        {
            return false;
        }

        var slice = buffer.Slice(0, size);
        if (slice.IsSingleSegment)
        {
            frame = slice.First;
        }
        else
        {
            rented = ArrayPool<byte>.Shared.Rent((int)size);
            slice.CopyTo(rented);
            frame = rented.AsMemory(0, (int)size);
        }

        buffer = buffer.Slice(size);
        return true;
    }

    /// <summary>
    /// Checks an AMQP frame's header (spec 2.3) and decodes its performative: null for an empty frame (a heartbeat).
    /// Malformed input throws <see cref="AmqpException"/> (framing-error) or <see cref="AmqpDecodeException"/>.
    /// </summary>
    internal static (ushort Channel, Performative? Performative, int PayloadOffset) DecodeFrame(ReadOnlySpan<byte> frame, ushort channelMax)
    {
        if (frame.Length < FrameHeaderSize)
        {
            throw new AmqpException(ErrorCondition.FramingError, $"A frame of {frame.Length} bytes is shorter than its header.");
        }

        var doff = frame[4];
        if (doff < 2 || doff * 4 > frame.Length)
        {
            throw new AmqpException(ErrorCondition.FramingError, $"Invalid data offset {doff}.");
        }

        if (frame[5] != 0)
        {
            throw new AmqpException(ErrorCondition.FramingError, $"Unexpected frame type {frame[5]} after SASL.");
        }

        var channel = BinaryPrimitives.ReadUInt16BigEndian(frame[6..]);
        if (channel > channelMax)
        {
            // Spec 2.7.1: a channel number beyond the channel-max this side announced is a framing error.
            throw new AmqpException(ErrorCondition.FramingError, $"Channel {channel} exceeds the channel-max of {channelMax}.");
        }

        var body = frame[(doff * 4)..];
        if (body.IsEmpty)
        {
            return (channel, null, frame.Length);
        }

        var reader = new AmqpReader(body);
        var performative = Performative.Decode(ref reader);
        return (channel, performative, doff * 4 + reader.Position);
    }

    private void ProcessFrame(ReadOnlySpan<byte> frame)
    {
        var (channel, decoded, payloadOffset) = DecodeFrame(frame, Options.ChannelMax);
        if (decoded is not { } performative)
        {
            Interlocked.Increment(ref _heartbeatsReceived);
            return; // heartbeat
        }

        var payload = frame[payloadOffset..];
        if (RemoteOpen is null && performative is not Open)
        {
            throw new AmqpException(ErrorCondition.IllegalState, $"Expected open, received {performative.GetType().Name.ToLowerInvariant()}.");
        }

        switch (performative)
        {
            case Open open: OnOpen(open); break;
            case Begin begin: OnBegin(channel, begin); break;
            case Close close: OnClose(close); break;
            case SaslMechanisms or SaslInit or SaslChallenge or SaslResponse or SaslOutcome:
                throw new AmqpException(ErrorCondition.FramingError, "SASL performative on an AMQP frame.");
            default:
                AmqpSession? session;
                lock (Sync)
                {
                    _remoteSessions.TryGetValue(channel, out session);
                }

                if (session is null)
                {
                    throw new AmqpException(ErrorCondition.IllegalState, $"Frame on channel {channel}, which has no session.");
                }

                session.OnFrame(performative, payload);
                break;
        }
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

    private async Task<byte[]> ReadExactAsync(int count, CancellationToken cancellationToken)
    {
        while (true)
        {
            var result = await _input.ReadAsync(cancellationToken).ConfigureAwait(false);
            if (result.Buffer.Length >= count)
            {
                var bytes = result.Buffer.Slice(0, count).ToArray();
                _input.AdvanceTo(result.Buffer.GetPosition(count));
                return bytes;
            }

            if (result.IsCompleted)
            {
                throw new IOException("The peer closed the transport during the protocol handshake.");
            }

            _input.AdvanceTo(result.Buffer.Start, result.Buffer.End);
        }
    }

    private async Task ExpectHeaderAsync(byte[] expected, CancellationToken cancellationToken)
    {
        var header = await ReadExactAsync(8, cancellationToken).ConfigureAwait(false);
        if (!header.AsSpan().SequenceEqual(expected))
        {
            throw new AmqpException(ErrorCondition.NotAllowed, $"The peer answered with protocol header {Convert.ToHexString(header)}.");
        }
    }

    private async Task<Performative> ReadSaslFrameAsync(CancellationToken cancellationToken)
    {
        var sizeBytes = await ReadExactAsync(4, cancellationToken).ConfigureAwait(false);
        var size = CheckSaslFrameSize(BinaryPrimitives.ReadUInt32BigEndian(sizeBytes));
        var rest = await ReadExactAsync((int)size - 4, cancellationToken).ConfigureAwait(false);
        return DecodeSaslFrame(rest);
    }

    /// <summary>The size of a SASL frame, checked before its bytes are read: 8 bytes (a header) to 64 KiB.</summary>
    internal static uint CheckSaslFrameSize(uint size) =>
        size is < FrameHeaderSize or > MinMaxFrameSize * 128
            ? throw new AmqpException(ErrorCondition.FramingError, $"SASL frame size {size} is invalid.")
            : size;

    /// <summary>Decodes a SASL frame (spec 5.3.1) from the bytes after its size: data offset, type 1, the performative.</summary>
    internal static Performative DecodeSaslFrame(ReadOnlySpan<byte> rest)
    {
        var doff = rest.Length >= 4 ? rest[0] : throw new AmqpException(ErrorCondition.FramingError, "A SASL frame is shorter than its header.");
        if (rest[1] != 1 || doff < 2 || doff * 4 > rest.Length + 4)
        {
            throw new AmqpException(ErrorCondition.FramingError, "Invalid SASL frame header.");
        }

        var reader = new AmqpReader(rest[(doff * 4 - 4)..]);
        return Performative.Decode(ref reader);
    }

    private async Task WriteSaslFrameAsync(Performative performative, CancellationToken cancellationToken)
    {
        using var buffer = new ByteBuffer(256);
        var start = buffer.Reserve(FrameHeaderSize);
        performative.Encode(buffer);
        var header = buffer.WrittenRange(start, FrameHeaderSize);
        BinaryPrimitives.WriteUInt32BigEndian(header, (uint)buffer.Length);
        header[4] = 2;
        header[5] = 1;
        await _stream.WriteAsync(buffer.WrittenMemory, cancellationToken).ConfigureAwait(false);
    }

    private async Task NegotiateSaslAsClientAsync(SaslProfile profile, CancellationToken cancellationToken)
    {
        await _stream.WriteAsync(SaslHeader, cancellationToken).ConfigureAwait(false);
        await ExpectHeaderAsync(SaslHeader, cancellationToken).ConfigureAwait(false);
        if (await ReadSaslFrameAsync(cancellationToken).ConfigureAwait(false) is not SaslMechanisms mechanisms)
        {
            throw new AmqpException(ErrorCondition.IllegalState, "Expected sasl-mechanisms.");
        }

        if (!mechanisms.Mechanisms.Any(m => m.Value == profile.Mechanism))
        {
            throw new AmqpException(ErrorCondition.NotImplemented,
                $"The server does not offer SASL mechanism {profile.Mechanism} (offers {string.Join(", ", mechanisms.Mechanisms)}).");
        }

        await WriteSaslFrameAsync(new SaslInit { Mechanism = profile.Mechanism, InitialResponse = profile.InitialResponse, HostName = Options.HostName }, cancellationToken).ConfigureAwait(false);
        while (true)
        {
            switch (await ReadSaslFrameAsync(cancellationToken).ConfigureAwait(false))
            {
                case SaslChallenge:
                    await WriteSaslFrameAsync(new SaslResponse { Response = [] }, cancellationToken).ConfigureAwait(false);
                    break;
                case SaslOutcome { Code: SaslCode.Ok }:
                    return;
                case SaslOutcome outcome:
                    throw new AmqpException(ErrorCondition.UnauthorizedAccess, $"SASL authentication failed ({outcome.Code}).");
                default:
                    throw new AmqpException(ErrorCondition.IllegalState, "Unexpected SASL frame.");
            }
        }
    }

    private async Task<bool> NegotiateSaslAsListenerAsync(IReadOnlyList<SaslMechanism> mechanisms, CancellationToken cancellationToken)
    {
        await WriteSaslFrameAsync(new SaslMechanisms { Mechanisms = [.. mechanisms.Select(m => m.Symbol)] }, cancellationToken).ConfigureAwait(false);
        if (await ReadSaslFrameAsync(cancellationToken).ConfigureAwait(false) is not SaslInit init)
        {
            await WriteSaslFrameAsync(new SaslOutcome { Code = SaslCode.Sys }, cancellationToken).ConfigureAwait(false);
            return false;
        }

        var mechanism = mechanisms.FirstOrDefault(m => m.Name == init.Mechanism.Value);
        var ok = mechanism is not null && mechanism.Authenticate(init.InitialResponse);
        await WriteSaslFrameAsync(new SaslOutcome { Code = ok ? SaslCode.Ok : SaslCode.Auth }, cancellationToken).ConfigureAwait(false);
        SaslMechanism = ok ? mechanism!.Name : null;
        return ok;
    }
}
