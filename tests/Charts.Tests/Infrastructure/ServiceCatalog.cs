using System.Reflection;
using DroneDelivery.Delivery;
using DroneDelivery.DroneScheduler;
using DroneDelivery.Gateway;
using DroneDelivery.Package;
using Microsoft.AspNetCore.Builder;

namespace DroneDelivery.Charts.Tests.Infrastructure;

/// <summary>A service as the chart deploys it, with the registrations its Program makes.</summary>
public sealed record ChartService(string ValuesKey, string Name, Action<WebApplicationBuilder> AddServices)
{
    public override string ToString() => Name;
}

/// <summary>
/// The six services, each with the registration method its Program calls
/// (<c>builder.Add&lt;Project&gt;Services()</c>), found in the service's own assembly.
/// </summary>
public static class ServiceCatalog
{
    /// <summary>values key, Kubernetes name, project (assembly DroneDelivery.&lt;project&gt;), a type of the assembly.</summary>
    private static readonly (string ValuesKey, string Name, string Project, Assembly Assembly)[] Services =
    [
        ("gateway", "gateway", "Gateway", typeof(GatewayServices).Assembly),
        ("ingestion", "ingestion", "Ingestion", Assembly.Load("DroneDelivery.Ingestion")),
        ("workflow", "workflow", "Workflow", Assembly.Load("DroneDelivery.Workflow")),
        ("delivery", "delivery", "Delivery", typeof(DeliveryServices).Assembly),
        ("package", "package", "Package", typeof(PackageServices).Assembly),
        ("droneScheduler", "dronescheduler", "DroneScheduler", typeof(DroneSchedulerServices).Assembly),
    ];

    /// <summary>The services whose registration method exists.</summary>
    public static IReadOnlyList<ChartService> All { get; } = Services
        .Select(s => (s, Method: RegistrationMethod(s.Assembly, s.Project)))
        .Where(s => s.Method is not null)
        .Select(s => new ChartService(s.s.ValuesKey, s.s.Name, builder => s.Method!.Invoke(null, [builder])))
        .ToList();

    /// <summary>Services of the chart whose project has no registration method yet, with what is missing.</summary>
    public static IReadOnlyList<string> Missing { get; } = Services
        .Where(s => RegistrationMethod(s.Assembly, s.Project) is null)
        .Select(s => $"{s.Name}: {s.Assembly.GetName().Name} has no public static Add{s.Project}Services(WebApplicationBuilder)")
        .ToList();

    public static ChartService Named(string name) => All.Single(s => s.Name == name);

    public static TheoryData<string> Names => new(All.Select(s => s.Name));

    private static MethodInfo? RegistrationMethod(Assembly assembly, string project) =>
        assembly.GetExportedTypes()
            .Where(t => t.IsAbstract && t.IsSealed)
            .Select(t => t.GetMethod($"Add{project}Services", BindingFlags.Public | BindingFlags.Static, [typeof(WebApplicationBuilder)]))
            .FirstOrDefault(m => m is not null);
}
