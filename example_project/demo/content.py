"""Texts of the demo site: a fictional town paper and its shop, written for this project.

Every name, place and event here is invented. The site (``demo.site``) wraps
these texts in several layouts; nothing else in the demo carries prose.
"""

from __future__ import annotations

from typing import NamedTuple


class Article(NamedTuple):
    slug: str
    section: str
    title: str
    author: str
    date: str
    paragraphs: tuple[str, ...]


class Product(NamedTuple):
    slug: str
    name: str
    price: str
    description: tuple[str, ...]
    specs: tuple[tuple[str, str], ...]


SITE_NAME = "The Larkmoor Courier"
PARTNER_NAME = "Valley Morning Post"
SHOP_NAME = "Courier Store"

ARTICLES: tuple[Article, ...] = (
    Article(
        "river-cleanup", "town", "Volunteers pull two tonnes of rubbish from the Elden",
        "Maya Okafor", "2026-03-02",
        (
            "More than three hundred volunteers waded into the shallows of the Elden on Saturday "
            "morning and came back with two tonnes of rubbish, the largest haul since the river "
            "clean-up began eleven years ago. Shopping trolleys, a rusted moped and a surprising "
            "number of traffic cones were hauled up the bank near the old tannery.",
            "Organiser Priya Lund said the group had changed its approach this year. Instead of "
            "walking the whole length of the river, teams concentrated on the three weirs where "
            "debris collects after winter storms. The council lent two flatbed trucks and the "
            "rowing club ferried bags across the deepest stretch.",
            "Water bailiffs say that fish numbers below the tannery weir have doubled since the "
            "first clean-up. The next session is planned for September, when the water is low "
            "enough to reach the gravel bars under the railway bridge.",
        ),
    ),
    Article(
        "library-extension", "town", "Library extension opens with a reading room for teenagers",
        "Tom Bright", "2026-03-05",
        (
            "The Larkmoor library reopened its east wing this week after a fourteen-month "
            "building project that added a glass reading room, a recording booth and a quiet "
            "study floor. The extension was paid for by a heritage grant and a decade of book "
            "sales run by the Friends of the Library.",
            "Head librarian Ingrid Salt said the new room was designed with the help of a panel "
            "of local teenagers, who asked for long tables, plenty of sockets and no carpet. "
            "They also chose the name of the room, which will be called the Loft after the hay "
            "loft that stood on the site a century ago.",
            "Opening hours on weekday evenings will be extended until nine o'clock from April. "
            "The recording booth can be booked free of charge by anyone with a library card.",
        ),
    ),
    Article(
        "bakery-award", "food", "Corner bakery wins regional prize for its rye loaf",
        "Elena Marsh", "2026-03-07",
        (
            "A family bakery on Tanner's Row has won the regional bread championship with a dark "
            "rye loaf made from a starter that the owners say is older than their shop. Judges "
            "praised the crust and the faint taste of caraway, and placed it first among ninety "
            "entries from across the valley.",
            "Joe and Maria Pellow took over the bakery from Maria's uncle in 2009. They still "
            "bake through the night in a brick oven that has to be fired by hand, and they "
            "refuse to sell bread that is more than a day old. Leftovers go to the food bank at "
            "closing time.",
            "The couple plan to spend the prize money on a second-hand dough mixer and an "
            "apprenticeship for a young baker. Queues on Saturday reached the post office.",
        ),
    ),
    Article(
        "cycle-lanes", "town", "Council approves protected cycle lanes on the ring road",
        "Tom Bright", "2026-03-09",
        (
            "Councillors voted by twenty-one to eight on Tuesday to build kerb-protected cycle "
            "lanes along the northern half of the ring road. The scheme replaces painted lines "
            "that cyclists had described as decoration rather than protection.",
            "The plan removes one lane of parking outside the retail park and narrows the "
            "junction at Mill Street, which saw four collisions involving bicycles last year. "
            "Traders had argued that losing parking would hurt business, but a survey by the "
            "council found that most shoppers there arrive on foot or by bus.",
            "Work is due to start in June and last about four months. Buses will be diverted "
            "along Quarry Lane while the Mill Street junction is rebuilt.",
        ),
    ),
    Article(
        "school-robotics", "science", "Pupils' robot reaches the national final",
        "Sana Iqbal", "2026-03-11",
        (
            "A team of six pupils from Northgate School has built a robot that sorts recycling "
            "by colour and weight, and it has carried them to the national final of a schools "
            "engineering contest. The machine, nicknamed Binsley, uses a cheap camera and a set "
            "of kitchen scales taken apart and rebuilt.",
            "The pupils spent most of the winter term after school in the physics laboratory. "
            "Their teacher, Mr Adebayo, said the hardest part was not the programming but "
            "getting the conveyor belt to stop jamming on yoghurt pots.",
            "The final takes place in May. The team is raising money for the trip by repairing "
            "bicycles in the school car park on Friday afternoons.",
        ),
    ),
    Article(
        "market-hall", "town", "Market hall roof to be repaired before the summer fair",
        "Maya Okafor", "2026-03-12",
        (
            "The Victorian market hall will get a new roof before the summer fair, after "
            "inspectors found that several cast-iron brackets had cracked during the January "
            "frost. Stallholders have been moved to the square while scaffolding goes up.",
            "The repair will reuse as much of the original slate as possible. A specialist "
            "firm from the coast will recast the broken brackets in a foundry that still works "
            "from nineteenth-century patterns.",
            "Traders said the move to the square had been easier than they feared, although "
            "the fishmonger asked for an awning after a week of rain. The hall should reopen in "
            "the first week of July.",
        ),
    ),
    Article(
        "owl-survey", "science", "Barn owls return to the water meadows",
        "Sana Iqbal", "2026-03-14",
        (
            "Barn owls are breeding on the Elden water meadows again for the first time in "
            "twenty years, according to a survey by the county wildlife trust. Volunteers "
            "counted four nesting pairs in boxes that were put up along the hedgerows in 2021.",
            "The trust believes that rougher grass margins left by farmers have brought back "
            "the voles the owls depend on. Surveyors walked the meadows at dusk twice a week "
            "from November and listened for the birds' screeching calls.",
            "The trust asks walkers to keep dogs on leads near the boxes between April and "
            "August, and not to approach the nests to take photographs.",
        ),
    ),
    Article(
        "theatre-season", "culture", "Playhouse announces a season of new local writing",
        "Elena Marsh", "2026-03-16",
        (
            "The Larkmoor Playhouse will stage four new plays by writers from the valley in its "
            "autumn season, the first time the theatre has given a whole season to local work. "
            "The plays were chosen from more than two hundred scripts sent in last year.",
            "Among them is a comedy about a brass band that loses its instruments on the way to "
            "a contest, and a drama set during the flood of 1968, when the river rose into the "
            "high street. Artistic director Colm Reyes said the quality of the scripts had "
            "surprised the reading panel.",
            "Tickets go on sale in June, with a pay-what-you-can performance of each play on "
            "its opening Wednesday.",
        ),
    ),
    Article(
        "football-promotion", "sport", "Larkmoor Town clinch promotion with a late winner",
        "Dev Patel", "2026-03-18",
        (
            "Larkmoor Town secured promotion on Saturday with a header in the ninetieth minute "
            "from their captain, sending more than two thousand fans onto the pitch at Quarry "
            "Park. The win ends a six-year stay in the county league.",
            "The visitors had taken the lead just before half time and defended deep for most "
            "of the second half. Town equalised from a corner with twelve minutes to play, and "
            "the winner came from a long throw that bounced twice before Ben Hollis reached it.",
            "Manager Ruth Akers said the club would keep faith with the young squad that won "
            "the title. The ground will need new floodlights before the start of next season.",
        ),
    ),
    Article(
        "bus-timetable", "town", "Evening buses return to the hill villages",
        "Maya Okafor", "2026-03-20",
        (
            "Evening buses will run again to the hill villages of Coldharbour and Netherby from "
            "next month, three years after the service was cut. The last departure from the bus "
            "station will leave at twenty past eleven.",
            "The route is funded for two years by a county transport grant. Residents had "
            "collected more than a thousand signatures, pointing out that shift workers at the "
            "hospital had no way of getting home after late duties.",
            "The operator will use a smaller electric bus on the evening runs, which can turn in "
            "the narrow lanes above Netherby church.",
        ),
    ),
    Article(
        "allotment-waiting-list", "town", "Allotment waiting list passes four hundred names",
        "Tom Bright", "2026-03-22",
        (
            "The waiting list for an allotment in Larkmoor has passed four hundred names, and "
            "new applicants are being told to expect a wait of up to seven years. The council "
            "owns five sites with a little over two hundred plots between them.",
            "The allotment society wants the council to split the largest plots in half, as "
            "many tenants struggle to keep a full plot in order. It has also asked for a strip "
            "of unused land behind the cemetery to become a sixth site.",
            "A council spokesperson said both ideas would be considered at the parks committee "
            "in May.",
        ),
    ),
    Article(
        "museum-hoard", "culture", "Museum puts medieval coin hoard on display",
        "Elena Marsh", "2026-03-24",
        (
            "A hoard of more than six hundred silver coins found by a metal detectorist near "
            "Netherby has gone on display at the town museum. The coins were buried in a clay "
            "pot around the middle of the fourteenth century.",
            "Curator Amos Vane said the hoard was probably hidden by a wool merchant during a "
            "period of unrest, and never recovered. Most of the coins were struck in the valley, "
            "but a few came from as far away as Flanders.",
            "The museum raised the money to buy the hoard through a public appeal in which "
            "children collected coins of their own. Entry to the exhibition is free.",
        ),
    ),
    Article(
        "hospital-parking", "town", "Hospital car park to charge by the minute",
        "Dev Patel", "2026-03-26",
        (
            "Visitors to Larkmoor General will pay for parking by the minute from May, replacing "
            "the hourly rate that patients have long complained about. Blue badge holders and "
            "parents of children on the ward will continue to park free.",
            "The hospital trust says the new machines read number plates, so drivers no longer "
            "need to guess how long an appointment will take. Patient groups welcomed the "
            "change but asked for the price cap for a whole day to be lowered.",
            "The trust will also add sixty spaces on the former laundry site, which has been "
            "empty since the laundry moved out of town.",
        ),
    ),
    Article(
        "choir-competition", "culture", "Chapel choir takes first prize at the eisteddfod",
        "Elena Marsh", "2026-03-28",
        (
            "The Ebenezer Chapel choir has won first prize in the mixed choir category at the "
            "spring eisteddfod, beating eleven choirs from larger towns. The choir has forty "
            "members, the youngest fifteen and the oldest eighty-seven.",
            "Their winning programme included a hymn tune written by a Larkmoor quarryman in "
            "1902, which the conductor found in the chapel archive. The adjudicator described "
            "the performance as warm and beautifully balanced.",
            "The choir will sing the programme again at a free concert in the chapel on Easter "
            "Sunday evening.",
        ),
    ),
    Article(
        "solar-school", "science", "Solar panels cut school energy bills by a third",
        "Sana Iqbal", "2026-03-30",
        (
            "Solar panels installed on the roofs of three Larkmoor primary schools last summer "
            "have cut their electricity bills by about a third, figures from the council show. "
            "The savings are larger than the council had forecast.",
            "Pupils at Riverside Primary check a display in the entrance hall every morning "
            "that shows how much power the panels produced the day before. Their headteacher "
            "said the display had done more for science lessons than any textbook.",
            "The council plans to fit panels on four more schools during the summer holidays, "
            "and is looking at batteries to store power for the winter months.",
        ),
    ),
    Article(
        "fell-race", "sport", "Record field for the Beacon fell race",
        "Dev Patel", "2026-04-01",
        (
            "A record four hundred runners took on the Beacon fell race on Sunday, climbing "
            "nearly six hundred metres from the cricket field to the summit cairn and back. The "
            "race was won by a forestry worker from Coldharbour in a little over forty minutes.",
            "Mist on the top made navigation difficult, and several runners followed the wrong "
            "wall down into the next valley. Marshals with radios guided them back, and nobody "
            "needed the mountain rescue team.",
            "The organisers will cap the field next year to protect the path across the bog, "
            "which is being repaired with stone slabs carried up by helicopter.",
        ),
    ),
    Article(
        "cafe-repair", "food", "Repair café fixes its thousandth kettle",
        "Maya Okafor", "2026-04-03",
        (
            "The repair café that meets in the scout hut on the first Saturday of each month has "
            "fixed its thousandth kettle. Volunteers with soldering irons and sewing machines "
            "have also mended lamps, toasters, coats and a surprising number of accordions.",
            "Founder Walter Briggs, a retired electrician, said most broken appliances only need "
            "a new fuse or a cleaned contact. The café asks for a donation rather than a fee, "
            "and serves tea and cake while people wait.",
            "The volunteers are looking for someone who can repair bicycles and clocks, the two "
            "things they are asked about most often and can rarely help with.",
        ),
    ),
    Article(
        "flood-defences", "town", "New flood wall tested by the spring tide",
        "Tom Bright", "2026-04-05",
        (
            "The new flood wall along Riverside Walk faced its first real test during last "
            "week's spring tide, when the Elden rose higher than at any time since 2014. The "
            "wall held, and no homes were flooded.",
            "The wall includes glass panels so that people walking along the river can still see "
            "the water. Some residents had worried that the panels would crack under pressure, "
            "but engineers said they are stronger than the concrete sections around them.",
            "The Environment Agency will inspect the wall again in the autumn, and plans to "
            "plant willows on the opposite bank to slow the water upstream.",
        ),
    ),
    Article(
        "chess-club", "culture", "Chess club marks its centenary with a giant board",
        "Dev Patel", "2026-04-07",
        (
            "The Larkmoor chess club celebrated its hundredth birthday by painting a giant chess "
            "board on the paving of the market square. Members played exhibition games with "
            "pieces made by the woodwork class at the technical college.",
            "The club was founded in 1926 by railway workers who played during their lunch "
            "breaks in the signal box. It now has sixty members and meets on Thursday evenings "
            "above the Red Lion.",
            "The board will stay in the square all summer, and the pieces can be borrowed from "
            "the tourist information office.",
        ),
    ),
    Article(
        "orchard-planting", "food", "Community orchard planted on the old rail yard",
        "Elena Marsh", "2026-04-09",
        (
            "Forty fruit trees have been planted on the old rail yard at the end of Station "
            "Road, turning a patch of weeds and broken concrete into a community orchard. The "
            "varieties include three apples that were once grown only in the valley.",
            "Grafts for the old varieties came from a single tree in a garden in Netherby, whose "
            "owner had kept it alive for sixty years. The orchard group hopes to sell young "
            "trees grafted from the new planting to pay for fencing and a water supply.",
            "The first fruit is expected in three years. Until then, volunteers will meet on "
            "Sunday mornings to mulch, weed and protect the young trunks from rabbits.",
        ),
    ),
)

PRODUCTS: tuple[Product, ...] = (
    Product(
        "enamel-mug", "Courier enamel mug", "£12.00",
        (
            "A white enamel mug with a blue rim and the Courier's masthead printed on the side. "
            "It survives camping trips, garden sheds and being dropped on the quarry path.",
            "Hand wash only: the dishwasher dulls the print after a few months.",
        ),
        (("Capacity", "350 ml"), ("Material", "Enamelled steel"), ("Weight", "220 g")),
    ),
    Product(
        "river-print", "Elden at dawn, art print", "£35.00",
        (
            "A giclée print of a watercolour by a Larkmoor painter showing mist lifting off the "
            "river below the tannery weir. Printed on heavy cotton rag paper with archival inks.",
            "Sent rolled in a tube, unframed, with a certificate signed by the artist.",
        ),
        (("Size", "A3"), ("Paper", "310 gsm cotton rag"), ("Edition", "Open")),
    ),
    Product(
        "tote-bag", "Market day tote bag", "£9.50",
        (
            "A sturdy canvas bag that holds a week of vegetables from the market hall, with "
            "long handles that sit comfortably on the shoulder.",
            "The pattern shows the hall's iron brackets and was drawn by a pupil at Northgate "
            "School.",
        ),
        (("Material", "Organic cotton canvas"), ("Handles", "65 cm"), ("Colour", "Natural")),
    ),
    Product(
        "walking-map", "Beacon and water meadows walking map", "£7.99",
        (
            "A folded waterproof map covering every footpath from the Beacon summit to the "
            "water meadows, with twelve circular walks marked in red.",
            "Includes bus stops for the hill villages and the opening times of the cafés along "
            "the way.",
        ),
        (("Scale", "1:25,000"), ("Format", "Folded, waterproof"), ("Walks", "12")),
    ),
    Product(
        "rye-cookbook", "Valley baking, a cookbook", "£18.00",
        (
            "Sixty recipes collected from bakers across the valley, from Saturday rye loaves to "
            "the spiced buns sold at the summer fair.",
            "Each recipe is tested in an ordinary kitchen oven and comes with notes on keeping a "
            "sourdough starter alive through a busy week.",
        ),
        (("Pages", "224"), ("Binding", "Hardback"), ("Photographs", "Colour throughout")),
    ),
    Product(
        "owl-box", "Barn owl nest box kit", "£64.00",
        (
            "A flat-packed nest box built to the wildlife trust's design, the same model that "
            "brought barn owls back to the water meadows.",
            "Made from untreated larch, with a removable inspection panel and fixing brackets "
            "for a pole or a barn wall.",
        ),
        (("Timber", "Larch, 18 mm"), ("Assembled size", "70 x 45 x 45 cm"), ("Tools", "Screwdriver")),
    ),
    Product(
        "archive-photo", "Flood of 1968 archive photograph", "£22.00",
        (
            "A reprint from the Courier's glass plate archive: the high street under a metre of "
            "water, with a rowing boat moored outside the chemist.",
            "Printed on matt photographic paper and mounted on grey card ready for framing.",
        ),
        (("Size", "30 x 40 cm"), ("Mount", "Grey card"), ("Year", "1968")),
    ),
    Product(
        "bird-feeder", "Copper bird feeder", "£27.50",
        (
            "A hanging seed feeder with a copper roof that weathers to green over a winter or "
            "two. The feeding ports are sized for finches and tits.",
            "Comes apart without tools so it can be scrubbed between refills.",
        ),
        (("Height", "32 cm"), ("Capacity", "1.2 litres of seed"), ("Material", "Copper and glass")),
    ),
    Product(
        "chess-set", "Centenary chess set", "£45.00",
        (
            "A turned beech chess set made by the woodwork class at the technical college to "
            "mark the chess club's hundredth birthday.",
            "The kings carry a tiny carved signal box, a nod to the railway workers who founded "
            "the club.",
        ),
        (("King height", "9 cm"), ("Wood", "Beech and walnut"), ("Board", "Not included")),
    ),
    Product(
        "rain-jacket", "Fell runner's rain jacket", "£89.00",
        (
            "A light, packable jacket with taped seams and a hood that stays put in a crosswind "
            "on the Beacon ridge.",
            "It folds into its own chest pocket and weighs less than a bar of soap and a banana.",
        ),
        (("Weight", "180 g"), ("Sizes", "XS to XXL"), ("Seams", "Fully taped")),
    ),
    Product(
        "honey-jar", "Water meadow honey", "£8.25",
        (
            "Runny honey from hives kept on the edge of the water meadows, where the bees work "
            "clover, bramble and willow.",
            "Every jar is labelled with the date it was extracted and the name of the beekeeper.",
        ),
        (("Weight", "340 g"), ("Type", "Runny"), ("Origin", "Larkmoor water meadows")),
    ),
    Product(
        "choir-cd", "Ebenezer Chapel choir live recording", "£11.00",
        (
            "The prize-winning programme from the spring eisteddfod, recorded live in the chapel "
            "with a single pair of microphones.",
            "Includes the quarryman's hymn of 1902 and a sleeve note on how it was found in the "
            "chapel archive.",
        ),
        (("Tracks", "14"), ("Length", "58 minutes"), ("Format", "CD and download code")),
    ),
    Product(
        "apple-trees", "Heritage apple tree, bare root", "£24.00",
        (
            "A young tree grafted from the orchard on the old rail yard, choosing between three "
            "apple varieties once found only in this valley.",
            "Bare-root trees are sent between November and March and should be planted within a "
            "week of arrival.",
        ),
        (("Rootstock", "MM106"), ("Age", "Two years"), ("Pollination group", "C")),
    ),
    Product(
        "repair-kit", "Repair café toolkit", "£31.00",
        (
            "The kit the repair café volunteers reach for first: precision screwdrivers, a fuse "
            "tester, spare fuses, a seam ripper and a small tub of contact cleaner.",
            "Packed in a roll-up canvas wallet with a card of safety tips for mains appliances.",
        ),
        (("Pieces", "27"), ("Case", "Canvas roll"), ("Weight", "640 g")),
    ),
)

SECTIONS = ("town", "science", "culture", "sport", "food")

# Boilerplate blocks: shared by many pages, so a fingerprint must look past them.
SITE_ABOUT = (
    "The Larkmoor Courier has reported on the town and the Elden valley since 1881. It is "
    "owned by a community trust and staffed by a small team of reporters and volunteers."
)
SITE_FOOTER = (
    "Copyright The Larkmoor Courier Trust. Registered office: 4 Bridge Street, Larkmoor. "
    "We follow the editors' code of practice; to report an error write to the corrections "
    "desk. Our privacy notice explains how we use cookies and what data we keep."
)
NEWSLETTER = (
    "Get the Courier in your inbox every Friday morning: the week's stories, the events "
    "diary and the crossword answers."
)
PARTNER_FOOTER = (
    "Valley Morning Post syndicates selected stories from partner titles across the region. "
    "All rights reserved by the original publishers. Terms of use, accessibility statement "
    "and advertising enquiries are listed on our help pages."
)
PARTNER_ADS = (
    "Spring sale at Hartley's Garden Centre: twenty per cent off all compost this weekend.",
    "Netherby Motors: MOT tests while you wait, courtesy car available on request.",
    "Learn to swim this summer at Larkmoor Leisure Centre, lessons for every age.",
    "Coldharbour Inn: Sunday roasts served from noon, families and walkers welcome.",
    "Find your next home with Pryce and Daughters, the valley's estate agents since 1952.",
    "Elden Valley Credit Union: saving made simple, loans made fair.",
)
SITE_ADS = (
    "Advertise with the Courier: reach twelve thousand readers every week.",
    "Larkmoor Carpets: free fitting on orders placed before the end of the month.",
    "Quarry Park season tickets for next season are on sale now at the club shop.",
)
SHOP_SIDEBAR = (
    "Every purchase from the Courier Store supports independent local journalism. Items are "
    "packed by volunteers in the old print works and posted from the Bridge Street office. "
    "Orders placed before two o'clock on a weekday are sent the same day."
)
SHOP_FOOTER = (
    "Delivery within the United Kingdom costs three pounds ninety-five and is free on orders "
    "over forty pounds. Unused items can be returned within thirty days for a full refund; "
    "the return label is in the parcel. Prices include VAT. The Courier Store is run by "
    "Larkmoor Courier Trading Limited, a wholly owned subsidiary of the Larkmoor Courier "
    "Trust, company number 0481516, registered in England and Wales. Card payments are "
    "processed securely by our payment provider and we never see your card number."
)
COOKIE_NOTICE = (
    "We use cookies to remember your basket and to count visits. You can change your choice "
    "at any time from the privacy link at the bottom of the page."
)
