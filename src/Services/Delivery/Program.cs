using DroneDelivery.Delivery;
using DroneDelivery.Delivery.Apis;
using DroneDelivery.ServiceDefaults;
using DroneDelivery.ServiceDefaults.Hosting;

var builder = WebApplication.CreateBuilder(args);
builder.AddServiceDefaults("delivery");
builder.AddDeliveryServices();
var app = builder.Build();
app.MapDefaultEndpoints();
app.MapDeliveryApi();
app.MapApiDocument();
return ServiceHost.Run(app);
