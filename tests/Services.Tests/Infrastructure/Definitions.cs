using DroneDelivery.Delivery;
using DroneDelivery.Delivery.Apis;
using DroneDelivery.Gateway;
using DroneDelivery.Gateway.Apis;
using DroneDelivery.DroneScheduler;
using DroneDelivery.DroneScheduler.Apis;
using DroneDelivery.Package;
using DroneDelivery.Package.Apis;
using DroneDelivery.Ingestion;
using DroneDelivery.Ingestion.Apis;
using DroneDelivery.Workflow;

namespace DroneDelivery.Services.Tests.Infrastructure;

/// <summary>The services as their Programs build them.</summary>
internal static class Definitions
{
    public static readonly ServiceDefinition Delivery = new("delivery", b => b.AddDeliveryServices(), a => a.MapDeliveryApi());

    public static readonly ServiceDefinition Gateway = new("gateway", b => b.AddGatewayServices(), a => a.MapInvoiceApi());

    public static readonly ServiceDefinition Package = new("package", b => b.AddPackageServices(), a => a.MapPackageApi());

    public static readonly ServiceDefinition DroneScheduler = new("dronescheduler", b => b.AddDroneSchedulerServices(), a => a.MapDroneDeliveryApi());

    public static readonly ServiceDefinition Ingestion = new("ingestion", b => b.AddIngestionServices(), a => a.MapDeliveryRequestApi());

    public static readonly ServiceDefinition Workflow = new("workflow", b => b.AddWorkflowServices(), _ => { });
}
