using DroneDelivery.Gateway;
using DroneDelivery.Security.PublicApis;
using DroneDelivery.Gateway.Apis;
using DroneDelivery.ServiceDefaults;
using DroneDelivery.ServiceDefaults.Hosting;

var builder = WebApplication.CreateBuilder(args);
builder.AddServiceDefaults("gateway");
builder.AddGatewayServices();
var app = builder.Build();
app.MapDefaultEndpoints();
app.UseEdgeSecurity();
app.MapInvoiceApi();
app.MapDeliveryStatusApi();
app.MapApiReference();
return ServiceHost.Run(app);
