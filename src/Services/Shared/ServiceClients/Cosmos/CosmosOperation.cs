using System.Diagnostics;

namespace DroneDelivery.ServiceClients.Cosmos;

/// <summary>
/// One logical operation against Cosmos DB (e.g. <c>GetDroneUtilization</c>): a span around it, and the
/// RU and data calls it cost, recorded as metrics and span attributes when it ends. The calls are
/// counted by <see cref="CosmosCallHandler"/>, which finds the current operation through the async flow.
/// </summary>
public sealed class CosmosOperation : IDisposable
{
    private static readonly AsyncLocal<CosmosOperation?> Ambient = new();

    private readonly CosmosOperation? _outer;
    private readonly Activity? _activity;
    private readonly Lock _sync = new();
    private double _requestCharge;
    private int _calls;
    private bool _ended;

    private CosmosOperation(string name)
    {
        Name = name;
        _outer = Ambient.Value;
        _activity = CosmosTelemetry.Source.StartActivity(name, ActivityKind.Internal);
        Ambient.Value = this;
    }

    public string Name { get; }

    /// <summary>RU charged so far, as reported by the SDK's responses.</summary>
    public double RequestCharge
    {
        get
        {
            lock (_sync)
            {
                return _requestCharge;
            }
        }
    }

    /// <summary>Data calls made so far.</summary>
    public int Calls => Volatile.Read(ref _calls);

    internal static CosmosOperation? Current => Ambient.Value;

    public static CosmosOperation Start(string name) => new(name);

    /// <summary>Adds the charge of one SDK response (the sum of the HTTP calls behind it).</summary>
    public void AddCharge(double requestCharge)
    {
        lock (_sync)
        {
            _requestCharge += requestCharge;
        }
    }

    /// <summary>Adds an attribute to the operation's span (e.g. the query options it ran with).</summary>
    public void SetTag(string name, object? value) => _activity?.SetTag(name, value);

    /// <summary>Marks the operation failed on its span.</summary>
    public void Fail(string reason) => _activity?.SetStatus(ActivityStatusCode.Error, reason);

    public void Dispose()
    {
        if (_ended)
        {
            return;
        }

        _ended = true;
        Ambient.Value = _outer;
        var tag = new KeyValuePair<string, object?>("operation", Name);
        CosmosTelemetry.OperationCharges.Record(RequestCharge, tag);
        CosmosTelemetry.OperationCallCounts.Record(Calls, tag);
        if (_activity is not null)
        {
            _activity.SetTag("db.system.name", "cosmosdb");
            _activity.SetTag(CosmosTelemetry.RequestChargeAttribute, RequestCharge);
            _activity.SetTag(CosmosTelemetry.CallCountAttribute, Calls);
            _activity.Dispose();
        }
    }

    internal void CountCall() => Interlocked.Increment(ref _calls);
}
