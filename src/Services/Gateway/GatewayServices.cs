using DroneDelivery.ServiceClients.Backends;
using DroneDelivery.Security.PublicApis;

namespace DroneDelivery.Gateway;

public static class GatewayServices
{
    /// <summary>The public edge's security, the three backends' clients (section <c>Backends</c>) and the invoice aggregator.</summary>
    public static WebApplicationBuilder AddGatewayServices(this WebApplicationBuilder builder)
    {
        builder.AddEdgeSecurity();
        builder.AddBackendClients();
        builder.Services.AddSingleton<InvoiceAggregator>();
        return builder;
    }
}
