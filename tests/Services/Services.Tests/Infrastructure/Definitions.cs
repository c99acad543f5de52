using DroneDelivery.Delivery;
using DroneDelivery.Delivery.Apis;
using DroneDelivery.Gateway;
using DroneDelivery.Gateway.Apis;
using DroneDelivery.DroneScheduler;
using DroneDelivery.Security.PublicApis;
using DroneDelivery.DroneScheduler.Apis;
using DroneDelivery.Package;
using DroneDelivery.Package.Apis;
using DroneDelivery.Ingestion;
using DroneDelivery.Ingestion.Apis;
using DroneDelivery.Workflow;

namespace DroneDelivery.Services.Tests.Infrastructure;

/// <summary>The services: their real Programs, and how those compose them (for services built but never started).</summary>
internal static class Definitions
{
    public static readonly ServiceDefinition Delivery = new("delivery", b => b.AddDeliveryServices(), a => a.MapDeliveryApi(), c => new ServiceFactory<DeliveryProgram>(c));

    public static readonly ServiceDefinition Gateway = new("gateway", b => b.AddGatewayServices(), a => a.UseEdgeSecurity().MapInvoiceApi().MapDeliveryStatusApi(), c => new ServiceFactory<GatewayProgram>(c)) { IsPublic = true };

    public static readonly ServiceDefinition Package = new("package", b => b.AddPackageServices(), a => a.MapPackageApi(), c => new ServiceFactory<PackageProgram>(c));

    public static readonly ServiceDefinition DroneScheduler = new("dronescheduler", b => b.AddDroneSchedulerServices(), a => a.MapDroneDeliveryApi(), c => new ServiceFactory<DroneSchedulerProgram>(c));

    public static readonly ServiceDefinition Ingestion = new("ingestion", b => b.AddIngestionServices(), a => a.UseEdgeSecurity().MapDeliveryRequestApi(), c => new ServiceFactory<IngestionProgram>(c)) { IsPublic = true };

    public static readonly ServiceDefinition Workflow = new("workflow", b => b.AddWorkflowServices(), _ => { }, c => new ServiceFactory<WorkflowProgram>(c));
}
