using DroneDelivery.Package;
using DroneDelivery.Package.Apis;
using DroneDelivery.ServiceDefaults;
using DroneDelivery.ServiceDefaults.Hosting;

var builder = WebApplication.CreateBuilder(args);
builder.AddServiceDefaults("package");
builder.AddPackageServices();
var app = builder.Build();
app.MapDefaultEndpoints();
app.MapPackageApi();
app.MapApiDocument();
return ServiceHost.Run(app);
