using DroneDelivery.Security.PublicApis;
using DroneDelivery.Ingestion;
using DroneDelivery.Ingestion.Apis;
using DroneDelivery.ServiceDefaults;
using DroneDelivery.ServiceDefaults.Hosting;

var builder = WebApplication.CreateBuilder(args);
builder.AddServiceDefaults("ingestion");
builder.AddIngestionServices();
var app = builder.Build();
app.MapDefaultEndpoints();
app.UseEdgeSecurity();
app.MapDeliveryRequestApi();
app.MapApiReference();
return ServiceHost.Run(app);
