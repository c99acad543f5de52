using DroneDelivery.Delivery;
using DroneDelivery.Delivery.Apis;

namespace DroneDelivery.Services.Tests.Infrastructure;

/// <summary>The services as their Programs build them.</summary>
internal static class Definitions
{
    public static readonly ServiceDefinition Delivery = new("delivery", b => b.AddDeliveryServices(), a => a.MapDeliveryApi());
}
