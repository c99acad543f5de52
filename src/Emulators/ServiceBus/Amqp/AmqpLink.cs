using DroneDelivery.Emulators.ServiceBus.Amqp.Framing;

namespace DroneDelivery.Emulators.ServiceBus.Amqp;

/// <summary>A link endpoint: attach/detach handshake and what both roles share.</summary>
public abstract class AmqpLink
{
    private readonly TaskCompletionSource _attached = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly TaskCompletionSource _detached = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private bool _attachSent;
    private bool _detachSent;
    private bool _refused;
    private Error? _rejection;
    private ITimer? _refusalTimer;
    private int _closedRaised;

    private protected AmqpLink(AmqpSession session, string name, LinkRole role, uint localHandle)
    {
        Session = session;
        Name = name;
        Role = role;
        LocalHandle = localHandle;
    }

    public AmqpSession Session { get; }

    public string Name { get; }

    /// <summary>This side's role on the link.</summary>
    public LinkRole Role { get; }

    public uint LocalHandle { get; }

    public uint? RemoteHandle { get; private set; }

    /// <summary>The peer's attach.</summary>
    public Attach? RemoteAttach { get; private set; }

    /// <summary>What this side sent in its attach.</summary>
    public LinkOptions? LocalOptions { get; private set; }

    public SenderSettleMode SenderSettleMode { get; private set; } = SenderSettleMode.Mixed;

    public ReceiverSettleMode ReceiverSettleMode { get; private set; } = ReceiverSettleMode.First;

    /// <summary>The peer's max-message-size (0 or null: no limit).</summary>
    public ulong? RemoteMaxMessageSize => RemoteAttach?.MaxMessageSize;

    public bool IsAttached => _attached.Task.IsCompletedSuccessfully && !IsClosed;

    public bool IsClosed { get; private set; }

    internal bool DetachSent => _detachSent;

    public Error? Error { get; private set; }

    /// <summary>Application state (e.g. which broker entity the link serves).</summary>
    public object? Context { get; set; }

    /// <summary>Raised once when the link is detached, by either side, or its session or connection ends.</summary>
    public event Action<AmqpLink, Error?>? Closed;

    internal Lock Sync => Session.Sync;

    internal abstract uint? FlowDeliveryCount { get; }

    internal abstract uint? FlowLinkCredit { get; }

    internal abstract bool FlowDrain { get; }

    /// <summary>Accepts a link the peer attached, echoing its terminus unless others are given.</summary>
    public void Accept(Source? source = null, Target? target = null, ulong? maxMessageSize = null, Dictionary<object, object?>? properties = null)
    {
        var remote = RemoteAttach ?? throw new InvalidOperationException("Only a link the peer attached can be accepted.");
        lock (Sync)
        {
            if (_attachSent || IsClosed)
            {
                return; // answered already, or the peer gave up on the link before it was answered
            }

            SendAttach(new LinkOptions
            {
                Name = Name,
                Source = source ?? remote.Source,
                Target = target ?? remote.Target,
                SenderSettleMode = remote.SenderSettleMode,
                ReceiverSettleMode = remote.ReceiverSettleMode,
                MaxMessageSize = maxMessageSize,
                Properties = properties,
            });
        }

        _attached.TrySetResult();
    }

    /// <summary>
    /// Refuses a link the peer attached: an attach with no terminus, then a detach carrying
    /// <paramref name="error"/>. The link ends when the peer answers with its own detach: until
    /// then its handle stays known, so that answer is not an unknown handle, which would end
    /// the session and with it every other link of the session. A peer that never answers gets
    /// <see cref="AmqpConnectionOptions.RefusedLinkTimeout"/> before the handle is freed.
    /// </summary>
    public void Reject(Error error)
    {
        _ = RemoteAttach ?? throw new InvalidOperationException("Only a link the peer attached can be rejected.");
        lock (Sync)
        {
            if (_detachSent || IsClosed)
            {
                return;
            }

            SendRefusalAttach();
            _rejection = error;
            SendDetach(error);
            var options = Session.Connection.Options;
            _refusalTimer = options.TimeProvider.CreateTimer(
                static state => ((AmqpLink)state!).Finish(((AmqpLink)state!)._rejection), this, options.RefusedLinkTimeout, Timeout.InfiniteTimeSpan);
        }
    }

    /// <summary>The attach that answers a link this side does not take: the peer's terminus on its side only.</summary>
    private void SendRefusalAttach()
    {
        if (_attachSent)
        {
            return;
        }

        var remote = RemoteAttach!;
        SendAttach(new LinkOptions
        {
            Name = Name,
            Source = Role == LinkRole.Sender ? null : remote.Source,
            Target = Role == LinkRole.Receiver ? null : remote.Target,
        });
    }

    /// <summary>Detaches (closes) the link and waits briefly for the peer's detach.</summary>
    public async Task CloseAsync(Error? error = null, CancellationToken cancellationToken = default)
    {
        lock (Sync)
        {
            if (!_detachSent && !IsClosed)
            {
                SendDetach(error);
            }
        }

        try
        {
            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            timeout.CancelAfter(TimeSpan.FromSeconds(5));
            await _detached.Task.WaitAsync(timeout.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            Finish(error);
        }
    }

    internal void SendAttach(LinkOptions options)
    {
        LocalOptions = options;
        _attachSent = true;
        if (RemoteAttach is null)
        {
            SenderSettleMode = options.SenderSettleMode;
            ReceiverSettleMode = options.ReceiverSettleMode;
        }

        Session.Connection.WriteFrame(Session.LocalChannel, new Attach
        {
            Name = Name,
            Handle = LocalHandle,
            Role = Role,
            SenderSettleMode = options.SenderSettleMode,
            ReceiverSettleMode = options.ReceiverSettleMode,
            Source = options.Source,
            Target = options.Target,
            InitialDeliveryCount = Role == LinkRole.Sender ? 0u : null,
            MaxMessageSize = options.MaxMessageSize,
            DesiredCapabilities = options.DesiredCapabilities,
            Properties = options.Properties,
        });
    }

    internal async Task WaitAttachedAsync(CancellationToken cancellationToken)
    {
        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        timeout.CancelAfter(Session.Connection.Options.OperationTimeout);
        try
        {
            await _attached.Task.WaitAsync(timeout.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (!cancellationToken.IsCancellationRequested)
        {
            Finish(new Error { Condition = ErrorCondition.InternalError, Description = "The peer did not answer the attach in time." });
            throw new TimeoutException($"Attaching link '{Name}' timed out.");
        }
    }

    internal void OnRemoteAttach(Attach attach)
    {
        lock (Sync)
        {
            RemoteAttach = attach;
            RemoteHandle = attach.Handle;
            if (!_attachSent)
            {
                SenderSettleMode = attach.SenderSettleMode;
                ReceiverSettleMode = attach.ReceiverSettleMode;
            }

            OnRemoteAttachCore(attach);
        }

        if (!_attachSent)
        {
            return; // peer-initiated: the handler accepts or rejects
        }

        // A refusing peer answers with a null terminus and follows with a detach carrying the reason.
        _refused = Role == LinkRole.Receiver ? attach.Source is null : attach.Target is null;
        if (!_refused)
        {
            _attached.TrySetResult();
        }
    }

    internal void OnRemoteDetach(Detach detach)
    {
        lock (Sync)
        {
            if (!_detachSent)
            {
                // A peer may give up on a link before this side answered its attach (an accept-next-session
                // still waiting, say): the attach still goes first, as the handshake requires.
                if (RemoteAttach is not null && !_attachSent)
                {
                    SendRefusalAttach();
                }

                SendDetach(null);
            }
        }

        var error = detach.Error ?? _rejection ?? (_refused ? new Error { Condition = ErrorCondition.NotFound, Description = "The peer refused the link." } : null);
        Finish(error);
    }

    internal void OnSessionEnded(Error? error) => Finish(error ?? new Error { Condition = ErrorCondition.DetachForced, Description = "The session ended." });

    private void SendDetach(Error? error)
    {
        _detachSent = true;
        Session.Connection.WriteFrame(Session.LocalChannel, new Detach { Handle = LocalHandle, Closed = true, Error = error });
    }

    private void Finish(Error? error)
    {
        if (Interlocked.Exchange(ref _closedRaised, 1) == 1)
        {
            return;
        }

        lock (Sync)
        {
            IsClosed = true;
            Error = error;
            _refusalTimer?.Dispose();
        }

        Session.RemoveLink(this);
        var exception = new AmqpException(error ?? new Error { Condition = ErrorCondition.DetachForced, Description = $"Link '{Name}' is closed." });
        _attached.TrySetException(exception);
        OnClosedCore(exception);
        _detached.TrySetResult();
        Closed?.Invoke(this, error);
    }

    internal void ThrowIfClosed()
    {
        if (IsClosed || _detachSent)
        {
            throw new AmqpException(Error ?? new Error { Condition = ErrorCondition.DetachForced, Description = $"Link '{Name}' is closed." });
        }
    }

    private protected virtual void OnRemoteAttachCore(Attach attach)
    {
    }

    private protected abstract void OnClosedCore(AmqpException exception);

    internal abstract void OnFlow(Flow flow);

    internal abstract void OnRemoteDisposition(OutgoingDelivery delivery, DeliveryState? state, bool settled);

    internal abstract void OnRemoteDisposition(IncomingDelivery delivery, DeliveryState? state, bool settled);
}
