using DroneDelivery.DroneScheduler;
using DroneDelivery.DroneScheduler.Apis;
using DroneDelivery.DroneScheduler.Seeding;
using DroneDelivery.ServiceDefaults;
using DroneDelivery.ServiceDefaults.Hosting;

// The same image runs the service and, as a Kubernetes Job, the data set loader.
if (args is [SeedCommand.Name, ..])
{
    return await SeedCommand.RunAsync(args[1..]);
}

var builder = WebApplication.CreateBuilder(args);
builder.AddServiceDefaults("dronescheduler");
builder.AddDroneSchedulerServices();
var app = builder.Build();
app.MapDefaultEndpoints();
app.MapDroneDeliveryApi();
app.MapApiDocument();
return ServiceHost.Run(app);
