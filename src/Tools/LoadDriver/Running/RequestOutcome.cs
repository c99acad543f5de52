namespace DroneDelivery.LoadDriver.Running;

internal enum OutcomeKind
{
    /// <summary>An HTTP response arrived; <see cref="RequestOutcome.StatusCode"/> says which.</summary>
    Response,

    /// <summary>No complete response within the request timeout.</summary>
    Timeout,

    /// <summary>The connection failed (refused, reset, closed mid-response).</summary>
    ConnectionError,

    /// <summary>The driver itself failed to build or read the request.</summary>
    ClientError,

    /// <summary>The run was cancelled while the request was outstanding; not counted as a request.</summary>
    Cancelled,
}

/// <summary>How one request ended.</summary>
internal readonly record struct RequestOutcome(OutcomeKind Kind, int StatusCode)
{
    public const string TimeoutLabel = "timeout";
    public const string ConnectionErrorLabel = "connection-error";
    public const string ClientErrorLabel = "client-error";
    public const string CancelledLabel = "cancelled";

    public static readonly RequestOutcome Timeout = new(OutcomeKind.Timeout, 0);
    public static readonly RequestOutcome ConnectionError = new(OutcomeKind.ConnectionError, 0);
    public static readonly RequestOutcome ClientError = new(OutcomeKind.ClientError, 0);
    public static readonly RequestOutcome Cancelled = new(OutcomeKind.Cancelled, 0);

    public static RequestOutcome Response(int statusCode) => new(OutcomeKind.Response, statusCode);

    /// <summary>A 2xx response; everything else that finished is an error.</summary>
    public bool IsSuccess => Kind == OutcomeKind.Response && StatusCode is >= 200 and <= 299;
}
