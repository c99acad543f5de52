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
return ServiceHost.Run(app);
