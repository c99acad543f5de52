using DroneDelivery.ServiceClients.Backends;
using DroneDelivery.Security.PublicApis;

namespace DroneDelivery.Gateway;

public static class GatewayServices
{
    /// <summary>
    /// The public edge's security and API reference (section <c>ApiReference</c>), the three backends' clients
    /// (section <c>Backends</c>) and the invoice aggregator.
    /// </summary>
    public static WebApplicationBuilder AddGatewayServices(this WebApplicationBuilder builder)
    {
        builder.AddEdgeSecurity();
        builder.AddApiReference();
        builder.AddBackendClients();
        builder.Services.AddSingleton<InvoiceAggregator>();
        return builder;
    }
}
