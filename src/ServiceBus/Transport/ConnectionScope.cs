using System.Collections.Concurrent;
using Azure.Core;
using DroneDelivery.Amqp;
using DroneDelivery.Amqp.Messaging;
using DroneDelivery.ServiceBus.Primitives;

namespace DroneDelivery.ServiceBus.Transport;

/// <summary>How the client authorises: a SAS key, a fixed SAS token, or an Entra ID credential (JWT).</summary>
internal abstract record ServiceBusCredential
{
    public abstract ValueTask<(string Token, string Type, DateTimeOffset ExpiresOn)> GetTokenAsync(string audience, TimeProvider time, CancellationToken cancellationToken);

    public sealed record SharedKey(string KeyName, string Key) : ServiceBusCredential
    {
        public static readonly TimeSpan Validity = TimeSpan.FromHours(1);

        public override ValueTask<(string, string, DateTimeOffset)> GetTokenAsync(string audience, TimeProvider time, CancellationToken cancellationToken)
        {
            var sas = SharedAccessSignature.Create(audience, KeyName, Key, Validity, time.GetUtcNow());
            return ValueTask.FromResult((sas.ToString(), ServiceBusAmqpNames.SasTokenType, sas.ExpiresOn));
        }
    }

    public sealed record Signature(string Token) : ServiceBusCredential
    {
        public override ValueTask<(string, string, DateTimeOffset)> GetTokenAsync(string audience, TimeProvider time, CancellationToken cancellationToken) =>
            ValueTask.FromResult((Token, ServiceBusAmqpNames.SasTokenType, SharedAccessSignature.TryParse(Token)?.ExpiresOn ?? DateTimeOffset.MaxValue));
    }

    public sealed record Entra(TokenCredential Credential) : ServiceBusCredential
    {
        private static readonly string[] Scopes = ["https://servicebus.azure.net/.default"];

        public override async ValueTask<(string, string, DateTimeOffset)> GetTokenAsync(string audience, TimeProvider time, CancellationToken cancellationToken)
        {
            var token = await Credential.GetTokenAsync(new TokenRequestContext(Scopes), cancellationToken).ConfigureAwait(false);
            return (token.Token, ServiceBusAmqpNames.JwtTokenType, token.ExpiresOn);
        }
    }
}

/// <summary>
/// One AMQP connection to a namespace, shared by a client's senders and receivers: opened on first use and again
/// after a failure, authorised per entity with CBS put-token (renewed before tokens expire), one session per link.
/// </summary>
internal sealed class ConnectionScope : IAsyncDisposable
{
    private readonly SemaphoreSlim _gate = new(1, 1);
    private readonly ConcurrentDictionary<string, DateTimeOffset> _audiences = new(StringComparer.Ordinal);
    private readonly CancellationTokenSource _disposed = new();
    private readonly ServiceBusCredential _credential;
    private readonly ServiceBusClientOptions _options;
    private readonly bool _useTls;
    private readonly int _port;
    private readonly Task _refresher;
    private AmqpConnection? _connection;
    private RequestResponseLink? _cbs;

    public ConnectionScope(Uri endpoint, ServiceBusCredential credential, ServiceBusClientOptions options, bool developmentEmulator)
    {
        if (options.TransportType == ServiceBusTransportType.AmqpWebSockets)
        {
            throw new NotSupportedException("AMQP over WebSockets is not supported by this client; use ServiceBusTransportType.AmqpTcp.");
        }

        Endpoint = endpoint;
        _credential = credential;
        _options = options;
        _useTls = !developmentEmulator;
        _port = developmentEmulator ? (endpoint.IsDefaultPort || endpoint.Port <= 0 ? 5672 : endpoint.Port) : 5671;
        _refresher = Task.Run(RefreshTokensAsync);
    }

    /// <summary>The namespace endpoint, <c>sb://host[:port]/</c>.</summary>
    public Uri Endpoint { get; }

    public string FullyQualifiedNamespace => Endpoint.Host;

    public RetryPolicy Retry => new(_options.RetryOptions, Time);

    public ServiceBusClientOptions Options => _options;

    /// <summary>The client's clock: try timeouts, backoff, receive waits, lock renewal, token expiry, heartbeats.</summary>
    public TimeProvider Time => _options.TimeProvider;

    /// <summary>Opens a session on the (re)opened connection after authorising <paramref name="entityPath"/>.</summary>
    public async Task<AmqpSession> OpenSessionAsync(string entityPath, CancellationToken cancellationToken)
    {
        var connection = await GetConnectionAsync(cancellationToken).ConfigureAwait(false);
        await AuthorizeAsync(entityPath, cancellationToken).ConfigureAwait(false);
        return await connection.BeginSessionAsync(cancellationToken).ConfigureAwait(false);
    }

    public async ValueTask DisposeAsync()
    {
        await _disposed.CancelAsync().ConfigureAwait(false);
        try
        {
            await _refresher.ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
        }

        if (_connection is { } connection)
        {
            await connection.CloseAsync().ConfigureAwait(false);
        }

        _gate.Dispose();
    }

    private async Task<AmqpConnection> GetConnectionAsync(CancellationToken cancellationToken)
    {
        ObjectDisposedException.ThrowIf(_disposed.IsCancellationRequested, this);
        if (_connection is { IsClosed: false } open)
        {
            return open;
        }

        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            if (_connection is { IsClosed: false } again)
            {
                return again;
            }

            _cbs = null;
            _audiences.Clear();
            _connection = await AmqpConnection.ConnectAsync(Endpoint.Host, _port, new AmqpConnectionOptions
            {
                ContainerId = _options.Identifier ?? Guid.NewGuid().ToString("N"),
                HostName = Endpoint.Host,
                Sasl = SaslProfile.MsSbCbs,
                UseTls = _useTls,
                CertificateValidation = _options.CertificateValidationCallback,
                IdleTimeout = TimeSpan.FromMinutes(1),
                OperationTimeout = _options.RetryOptions.TryTimeout,
                MaxFrameSize = 256 * 1024,
                TimeProvider = Time,
            }, cancellationToken).ConfigureAwait(false);
            return _connection;
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>Puts a token for the entity's audience on <c>$cbs</c> unless a valid one is already there.</summary>
    private async Task AuthorizeAsync(string entityPath, CancellationToken cancellationToken)
    {
        var audience = new Uri(Endpoint, entityPath).AbsoluteUri;
        if (_audiences.TryGetValue(audience, out var expiresOn) && expiresOn > Time.GetUtcNow().AddMinutes(5))
        {
            return;
        }

        await PutTokenAsync(audience, cancellationToken).ConfigureAwait(false);
    }

    private async Task PutTokenAsync(string audience, CancellationToken cancellationToken)
    {
        var connection = await GetConnectionAsync(cancellationToken).ConfigureAwait(false);
        var cbs = _cbs;
        if (cbs is null || cbs.IsClosed)
        {
            await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
            try
            {
                if (_cbs is null || _cbs.IsClosed)
                {
                    var session = await connection.BeginSessionAsync(cancellationToken).ConfigureAwait(false);
                    _cbs = await RequestResponseLink.CreateAsync(session, ServiceBusAmqpNames.CbsNode, null, cancellationToken).ConfigureAwait(false);
                }

                cbs = _cbs;
            }
            finally
            {
                _gate.Release();
            }
        }

        var (token, type, expiresOn) = await _credential.GetTokenAsync(audience, Time, cancellationToken).ConfigureAwait(false);
        var request = new AmqpMessage
        {
            ApplicationProperties = new Dictionary<string, object?>
            {
                [ServiceBusAmqpNames.CbsOperationKey] = ServiceBusAmqpNames.CbsPutToken,
                [ServiceBusAmqpNames.CbsTokenTypeKey] = type,
                [ServiceBusAmqpNames.CbsAudienceKey] = audience,
                [ServiceBusAmqpNames.CbsExpirationKey] = expiresOn.UtcDateTime,
            },
            Body = new ValueBody(token),
        };
        var response = await cbs.RequestAsync(request, _options.RetryOptions.TryTimeout, cancellationToken).ConfigureAwait(false);
        var status = response.ApplicationProperties?.GetValueOrDefault(ServiceBusAmqpNames.CbsStatusCodeKey) is int code ? code : 500;
        var description = response.ApplicationProperties?.GetValueOrDefault(ServiceBusAmqpNames.CbsStatusDescriptionKey)?.ToString();
        if (status is 401 or 403)
        {
            throw new UnauthorizedAccessException($"Authorization for '{audience}' was refused: {description}");
        }

        if (status is < 200 or > 299)
        {
            throw new ServiceBusException($"Authorization for '{audience}' failed with status {status}: {description}", ServiceBusFailureReason.GeneralError);
        }

        _audiences[audience] = expiresOn;
    }

    // Tokens are put again well before they expire so long-lived links keep their authorisation.
    private async Task RefreshTokensAsync()
    {
        using var timer = new PeriodicTimer(TimeSpan.FromMinutes(1), Time);
        while (await timer.WaitForNextTickAsync(_disposed.Token).ConfigureAwait(false))
        {
            foreach (var (audience, expiresOn) in _audiences.ToArray())
            {
                if (expiresOn - Time.GetUtcNow() > TimeSpan.FromMinutes(10) || _connection is not { IsClosed: false })
                {
                    continue;
                }

                try
                {
                    await PutTokenAsync(audience, _disposed.Token).ConfigureAwait(false);
                }
                catch (Exception e) when (e is not OperationCanceledException)
                {
                    // The next operation on that entity authorises again and reports the failure.
                    _audiences.TryRemove(audience, out _);
                }
            }
        }
    }
}
