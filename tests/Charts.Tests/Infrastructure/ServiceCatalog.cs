using Microsoft.AspNetCore.Builder;
using DroneDelivery.Delivery;
using DroneDelivery.DroneScheduler;
using DroneDelivery.Gateway;
using DroneDelivery.Package;

namespace DroneDelivery.Charts.Tests.Infrastructure;

/// <summary>A service as the chart deploys it, with the registrations its Program makes.</summary>
public sealed record ChartService(string ValuesKey, string Name, Action<WebApplicationBuilder> AddServices)
{
    public override string ToString() => Name;
}

/// <summary>The services whose settings types the chart is checked against (their real registrations).</summary>
public static class ServiceCatalog
{
    public static IReadOnlyList<ChartService> All { get; } =
    [
        new("gateway", "gateway", b => b.AddGatewayServices()),
        new("delivery", "delivery", b => b.AddDeliveryServices()),
        new("package", "package", b => b.AddPackageServices()),
        new("droneScheduler", "dronescheduler", b => b.AddDroneSchedulerServices()),
    ];

    public static ChartService Named(string name) => All.Single(s => s.Name == name);

    public static TheoryData<string> Names => new(All.Select(s => s.Name));
}
